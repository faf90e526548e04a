// Package awsjson makes the AWS calls the functions need beside DynamoDB,
// SQS and S3 (SSM GetParameter, Secrets Manager GetSecretValue, an
// asynchronous Lambda Invoke, X-Ray's OTLP spans) as HTTPS requests signed
// with SigV4, using the SDK's core but not its service clients: those weigh
// 2.2 MB of every binary that links them (docs/deploy.md, "Binary sizes").
//
// Errors are smithy.APIError values with the service's code and the HTTP
// status, as the clients' are; throttling, 5xx answers and broken
// connections are retried with the SDK's standard retryer.
package awsjson

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// maxAnswer bounds an answer's body: an SSM parameter is at most 8 KB, a
// secret 64 KB; Invoke's asynchronous answer is empty.
const maxAnswer = 1 << 20

// Client signs and sends the calls. Its zero value is not usable: New.
type Client struct {
	cfg    aws.Config
	http   aws.HTTPClient
	signer *v4.Signer
	retry  aws.Retryer
	now    func() time.Time
}

// New returns a client for cfg's region, credentials and base endpoint.
func New(cfg aws.Config) *Client {
	c := &Client{cfg: cfg, http: noRedirects(cfg.HTTPClient), signer: v4.NewSigner(), now: time.Now}
	if cfg.Retryer != nil {
		c.retry = cfg.Retryer()
	} else {
		c.retry = retry.NewStandard()
	}
	return c
}

// noRedirects returns h made to stop at the first answer: the SDK's client
// follows 307 and 308, which resend the signed request elsewhere and take
// the secret from there. A client of another type is wrapped instead.
func noRedirects(h aws.HTTPClient) aws.HTTPClient {
	var hc *http.Client
	switch t := h.(type) {
	case nil:
		hc, _ = awshttp.NewBuildableClient().Freeze().(*http.Client)
	case *awshttp.BuildableClient:
		hc, _ = t.Freeze().(*http.Client)
	case *http.Client:
		hc = t
	}
	if hc == nil {
		return firstAnswer{h}
	}
	cp := *hc
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

// firstAnswer refuses an answer from elsewhere than the request went (a followed redirect).
type firstAnswer struct{ aws.HTTPClient }

func (f firstAnswer) Do(req *http.Request) (*http.Response, error) {
	resp, err := f.HTTPClient.Do(req)
	if err == nil && resp.Request != nil && resp.Request.URL.String() != req.URL.String() {
		resp.Body.Close()
		return nil, fmt.Errorf("%s answered with a redirect, which is not followed", req.URL.Host)
	}
	return resp, err
}

// APIError is an error answer: the service's code and message, and the HTTP
// status (which the SDK's retry rules read).
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("api error %s: %s (HTTP %d)", e.Code, e.Message, e.Status)
}

// ErrorCode is the service's error code, e.g. ParameterNotFound.
func (e *APIError) ErrorCode() string { return e.Code }

// ErrorMessage is the service's message.
func (e *APIError) ErrorMessage() string { return e.Message }

// ErrorFault says whose fault it was: the server's for 5xx.
func (e *APIError) ErrorFault() smithy.ErrorFault {
	if e.Status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// HTTPStatusCode is the answer's status.
func (e *APIError) HTTPStatusCode() int { return e.Status }

var _ smithy.APIError = (*APIError)(nil)

// endpoint is cfg's base endpoint, else the service's public one.
func (c *Client) endpoint(service string) string {
	if c.cfg.BaseEndpoint != nil && *c.cfg.BaseEndpoint != "" {
		return strings.TrimRight(*c.cfg.BaseEndpoint, "/")
	}
	suffix := "amazonaws.com"
	if strings.HasPrefix(c.cfg.Region, "cn-") {
		suffix = "amazonaws.com.cn"
	}
	return "https://" + service + "." + c.cfg.Region + "." + suffix
}

// do sends one request, retried as the standard retryer decides; errorOf builds its error.
func (c *Client) do(ctx context.Context, service, path string, header http.Header, body []byte, errorOf func(int, http.Header, []byte) *APIError) ([]byte, error) {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	var last error
	for attempt := 1; ; attempt++ {
		out, err := c.once(ctx, service, path, header, body, hash, errorOf)
		if err == nil {
			return out, nil
		}
		last = err
		if ctx.Err() != nil || attempt >= c.retry.MaxAttempts() || !c.retry.IsErrorRetryable(err) {
			return nil, last
		}
		delay, derr := c.retry.RetryDelay(attempt, err)
		if derr != nil {
			return nil, last
		}
		select {
		case <-ctx.Done():
			return nil, last
		case <-time.After(delay):
		}
	}
}

func (c *Client) once(ctx context.Context, service, path string, header http.Header, body []byte, hash string, errorOf func(int, http.Header, []byte) *APIError) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint(service)+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.ContentLength = int64(len(body))
	creds, err := c.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s credentials: %w", service, err)
	}
	if err := c.signer.SignHTTP(ctx, creds, req, hash, service, c.cfg.Region, c.now().UTC()); err != nil {
		return nil, fmt.Errorf("sign %s request: %w", service, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err // the retryer knows connection errors
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, errorOf(resp.StatusCode, resp.Header, out)
	}
	return out, nil
}

// jsonError reads the JSON protocols' error answer: {"__type": "...#Code",
// "message": "..."}, the code also in X-Amzn-ErrorType.
func jsonError(status int, h http.Header, body []byte) *APIError {
	var doc struct {
		Type     string `json:"__type"`
		Message  string `json:"message"`
		MessageU string `json:"Message"`
	}
	json.Unmarshal(body, &doc)
	code := cmp.Or(doc.Type, h.Get("X-Amzn-ErrorType"))
	if i := strings.LastIndex(code, "#"); i >= 0 {
		code = code[i+1:]
	}
	if i := strings.Index(code, ":"); i >= 0 {
		code = code[:i]
	}
	return &APIError{Status: status, Code: cmp.Or(code, http.StatusText(status)), Message: cmp.Or(doc.Message, doc.MessageU)}
}

// call is one JSON 1.1 protocol operation (SSM, Secrets Manager).
func (c *Client) call(ctx context.Context, service, target string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	h := http.Header{"Content-Type": {"application/x-amz-json-1.1"}, "X-Amz-Target": {target}}
	answer, err := c.do(ctx, service, "/", h, body, jsonError)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("%s: unreadable answer: %w", target, err)
	}
	return nil
}

// SSM reads SSM parameters.
type SSM struct{ c *Client }

// NewSSM returns an SSM reader on cfg.
func NewSSM(cfg aws.Config) SSM { return SSM{New(cfg)} }

// GetParameter returns the decrypted value of parameter name ("" if none).
func (s SSM) GetParameter(ctx context.Context, name string) (string, error) {
	var out struct {
		Parameter *struct{ Value *string }
	}
	if err := s.c.call(ctx, "ssm", "AmazonSSM.GetParameter", map[string]any{"Name": name, "WithDecryption": true}, &out); err != nil {
		return "", err
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return "", nil
	}
	return *out.Parameter.Value, nil
}

// SecretsManager reads Secrets Manager secrets.
type SecretsManager struct{ c *Client }

// NewSecretsManager returns a Secrets Manager reader on cfg.
func NewSecretsManager(cfg aws.Config) SecretsManager { return SecretsManager{New(cfg)} }

// GetSecretValue returns secret id's current string value ("" for a binary one).
func (s SecretsManager) GetSecretValue(ctx context.Context, id string) (string, error) {
	var out struct{ SecretString *string }
	if err := s.c.call(ctx, "secretsmanager", "secretsmanager.GetSecretValue", map[string]any{"SecretId": id}, &out); err != nil {
		return "", err
	}
	if out.SecretString == nil {
		return "", nil
	}
	return *out.SecretString, nil
}

// Lambda invokes Lambda functions.
type Lambda struct{ c *Client }

// NewLambda returns a Lambda invoker on cfg.
func NewLambda(cfg aws.Config) Lambda { return Lambda{New(cfg)} }

// InvokeAsync invokes function (a name or ARN) with payload asynchronously (Lambda answers 202).
func (l Lambda) InvokeAsync(ctx context.Context, function string, payload []byte) error {
	h := http.Header{"Content-Type": {"application/json"}, "X-Amz-Invocation-Type": {"Event"}}
	if function == "" || strings.ContainsAny(function, "/?#% ") {
		return fmt.Errorf("invoke: %q is not a function name", function)
	}
	_, err := l.c.do(ctx, "lambda", "/2015-03-31/functions/"+function+"/invocations", h, payload, jsonError)
	return err
}

// XRay sends spans to X-Ray's OTLP traces endpoint, which authorizes them
// as xray:PutTraceSegments.
type XRay struct{ c *Client }

// NewXRay returns a span sender on cfg.
func NewXRay(cfg aws.Config) XRay { return XRay{New(cfg)} }

// PutSpans posts one gzipped OTLP/HTTP JSON request.
func (x XRay) PutSpans(ctx context.Context, body []byte) error {
	h := http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}
	_, err := x.c.do(ctx, "xray", "/v1/traces", h, body, jsonError)
	return err
}
