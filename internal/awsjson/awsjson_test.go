package awsjson

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"
)

func testConfig(url string) aws.Config {
	return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "token")}
}

// Each call is one signed JSON 1.1 request for its service, and the answer
// is read; an error answer is an APIError with the service's code, which a
// throttling answer only after the retries.
func TestCallsAreSignedAndErrorsKeepTheirCode(t *testing.T) {
	t.Parallel()
	var throttled atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		target := r.Header.Get("X-Amz-Target")
		switch {
		case !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || r.Header.Get("X-Amz-Security-Token") != "token":
			w.WriteHeader(403)
			w.Write([]byte(`{"__type":"UnrecognizedClientException","message":"unsigned"}`))
		case target == "AmazonSSM.GetParameter" && strings.Contains(auth, "/us-east-1/ssm/aws4_request") && strings.Contains(string(body), `"WithDecryption":true`):
			if strings.Contains(string(body), "/missing") {
				w.WriteHeader(400)
				w.Write([]byte(`{"__type":"com.amazonaws.ssm#ParameterNotFound","message":"no such parameter"}`))
				return
			}
			if strings.Contains(string(body), "/busy") {
				throttled.Add(1)
				w.WriteHeader(400)
				w.Write([]byte(`{"__type":"ThrottlingException","message":"Rate exceeded"}`))
				return
			}
			w.Write([]byte(`{"Parameter":{"Name":"/p/one","Value":"whsec_one"}}`))
		case target == "secretsmanager.GetSecretValue" && strings.Contains(auth, "/secretsmanager/aws4_request"):
			w.Write([]byte(`{"ARN":"arn","SecretString":"whsec_two"}`))
		case r.URL.Path == "/2015-03-31/functions/stack-reclaimer/invocations" && r.Header.Get("X-Amz-Invocation-Type") == "Event" &&
			strings.Contains(auth, "/lambda/aws4_request") && string(body) == `{"chain":1}`:
			w.WriteHeader(202)
		default:
			w.WriteHeader(400)
			w.Write([]byte(`{"__type":"ValidationException","message":"unexpected request"}`))
		}
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	ctx := context.Background()
	if v, err := NewSSM(cfg).GetParameter(ctx, "/p/one"); err != nil || v != "whsec_one" {
		t.Fatalf("GetParameter: %q %v", v, err)
	}
	if v, err := NewSecretsManager(cfg).GetSecretValue(ctx, "p/two"); err != nil || v != "whsec_two" {
		t.Fatalf("GetSecretValue: %q %v", v, err)
	}
	if err := NewLambda(cfg).InvokeAsync(ctx, "stack-reclaimer", []byte(`{"chain":1}`)); err != nil {
		t.Fatalf("InvokeAsync: %v", err)
	}
	var api smithy.APIError
	_, err := NewSSM(cfg).GetParameter(ctx, "/p/missing")
	if !errors.As(err, &api) || api.ErrorCode() != "ParameterNotFound" || api.ErrorMessage() != "no such parameter" {
		t.Fatalf("a missing parameter: %v", err)
	}
	_, err = NewSSM(cfg).GetParameter(ctx, "/p/busy")
	if !errors.As(err, &api) || api.ErrorCode() != "ThrottlingException" || throttled.Load() != 3 {
		t.Fatalf("throttled: %v after %d tries, want ThrottlingException after the standard retryer's 3", err, throttled.Load())
	}
	if err := NewLambda(cfg).InvokeAsync(ctx, "bad/name", nil); err == nil {
		t.Fatal("a function name with a slash was sent")
	}
}

// Without a base endpoint the Region's public one is used.
func TestEndpoint(t *testing.T) {
	t.Parallel()
	c := New(aws.Config{Region: "eu-west-1"})
	if got := c.endpoint("ssm"); got != "https://ssm.eu-west-1.amazonaws.com" {
		t.Errorf("endpoint %s", got)
	}
	if got := New(aws.Config{Region: "cn-north-1"}).endpoint("lambda"); got != "https://lambda.cn-north-1.amazonaws.com.cn" {
		t.Errorf("China endpoint %s", got)
	}
}

// following is an HTTP client of its own type that follows redirects.
type following struct{ c *http.Client }

func (f following) Do(r *http.Request) (*http.Response, error) { return f.c.Do(r) }

// A redirect is an answer, never followed: the signed request is not sent
// again elsewhere, and no secret is taken from there. Before, a 307 or 308
// was followed (the SDK's client follows them).
func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write([]byte(`{"Parameter":{"Name":"/p/one","Value":"whsec_from_elsewhere"},"SecretString":"whsec_from_elsewhere"}`))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", other.URL+"/")
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	for name, client := range map[string]aws.HTTPClient{"none": nil, "sdk": awshttp.NewBuildableClient(), "net/http": &http.Client{}, "own type": following{&http.Client{}}} {
		elsewhere.Store(0)
		cfg := testConfig(srv.URL)
		cfg.HTTPClient = client
		if v, err := NewSSM(cfg).GetParameter(context.Background(), "/p/one"); err == nil || v != "" {
			t.Errorf("%s client: GetParameter = %q, %v; want an error", name, v, err)
		}
		if v, err := NewSecretsManager(cfg).GetSecretValue(context.Background(), "p/one"); err == nil || v != "" {
			t.Errorf("%s client: GetSecretValue = %q, %v; want an error", name, v, err)
		}
		if name != "own type" && elsewhere.Load() != 0 {
			t.Errorf("%s client: the request went to the redirect's target %d times", name, elsewhere.Load())
		}
	}
}
