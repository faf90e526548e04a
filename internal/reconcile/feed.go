package reconcile

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/hookledger/hookledger/internal/providerapi"
)

// HTTPFeeder posts deliveries to the stack's webhook URL, exactly as the sender would.
type HTTPFeeder struct {
	// Webhook is the stack's WebhookUrl output (.../{source}/{tenant},
	// filled in) or its base.
	Webhook string
	Client  *http.Client
}

// ParseWebhookURL checks a webhook URL for HTTPFeeder.
func ParseWebhookURL(v string) error {
	u, err := url.Parse(strings.NewReplacer("{source}", "s", "{tenant}", "t").Replace(v))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("webhook URL %q: want the stack's WebhookUrl output, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com/webhooks/{source}/{tenant}", v)
	}
	return nil
}

// URL implements Feeder.
func (f *HTTPFeeder) URL(source, tenant string) string {
	u := strings.TrimRight(f.Webhook, "/")
	if strings.Contains(u, "{source}") || strings.Contains(u, "{tenant}") {
		return strings.NewReplacer("{source}", url.PathEscape(source), "{tenant}", url.PathEscape(tenant)).Replace(u)
	}
	if strings.HasSuffix(u, "/webhooks/"+source+"/"+tenant) {
		return u
	}
	return u + "/webhooks/" + url.PathEscape(source) + "/" + url.PathEscape(tenant)
}

// Feed implements Feeder.
func (f *HTTPFeeder) Feed(ctx context.Context, source, tenant string, hdr http.Header, body []byte) (Outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL(source, tenant), bytes.NewReader(body))
	if err != nil {
		return Outcome{}, err
	}
	req.Header = hdr.Clone()
	resp, err := cmp.Or(f.Client, http.DefaultClient).Do(req)
	if err != nil {
		return Outcome{}, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	out := Outcome{Status: resp.StatusCode, Result: resp.Header.Get("X-Hookledger-Result")}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		out.RetryAfter = providerapi.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return out, nil
}

// invoker is the slice of the Lambda client LambdaFeeder calls.
type invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

var _ invoker = (*lambda.Client)(nil)

// LambdaFeeder invokes the receiver function with the HTTP API event
// (payload 2.0) the route would send: the same handler, without the public
// endpoint (which may admit only the provider's addresses).
type LambdaFeeder struct {
	API      invoker
	Function string // the receiver function's name or ARN
	Host     string // the domain the event claims, for schemes that sign the URL (default reconcile.invalid)
}

func (f *LambdaFeeder) host() string { return cmp.Or(f.Host, "reconcile.invalid") }

// URL implements Feeder.
func (f *LambdaFeeder) URL(source, tenant string) string {
	return "https://" + f.host() + "/webhooks/" + source + "/" + tenant
}

// Event builds the event the route POST /webhooks/{source}/{tenant} would.
func (f *LambdaFeeder) Event(source, tenant string, hdr http.Header, body []byte) events.APIGatewayV2HTTPRequest {
	path := "/webhooks/" + source + "/" + tenant
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "POST /webhooks/{source}/{tenant}", RawPath: path,
		Headers:        map[string]string{"host": f.host(), "x-forwarded-proto": "https"},
		PathParameters: map[string]string{"source": source, "tenant": tenant},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: f.host(), Stage: "$default", RouteKey: "POST /webhooks/{source}/{tenant}",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: path, Protocol: "HTTP/1.1", UserAgent: hdr.Get("User-Agent")},
		},
	}
	for k, vs := range hdr {
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	// API Gateway hands text bodies as they are and others base64-encoded.
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// Feed implements Feeder with a synchronous invoke, read as an HTTP answer.
func (f *LambdaFeeder) Feed(ctx context.Context, source, tenant string, hdr http.Header, body []byte) (Outcome, error) {
	payload, err := json.Marshal(f.Event(source, tenant, hdr, body))
	if err != nil {
		return Outcome{}, err
	}
	out, err := f.API.Invoke(ctx, &lambda.InvokeInput{FunctionName: &f.Function, InvocationType: types.InvocationTypeRequestResponse, Payload: payload})
	if err != nil {
		return Outcome{}, fmt.Errorf("invoke %s: %w", f.Function, err)
	}
	if out.FunctionError != nil {
		return Outcome{}, fmt.Errorf("invoke %s: function error %s: %.200s", f.Function, *out.FunctionError, out.Payload)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out.Payload, &resp); err != nil || resp.StatusCode == 0 {
		return Outcome{}, fmt.Errorf("invoke %s: not an HTTP API answer: %.200s", f.Function, out.Payload)
	}
	result := ""
	for k, v := range resp.Headers {
		if strings.EqualFold(k, "X-Hookledger-Result") {
			result = v
		}
	}
	return Outcome{Status: resp.StatusCode, Result: result}, nil
}
