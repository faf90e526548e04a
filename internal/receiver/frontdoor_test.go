package receiver_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// The receiver has two front doors: the HTTP API's Lambda proxy integration
// and a Lambda function URL. Both hand it payload format 2.0; the function
// URL's event has routeKey "$default", no pathParameters, its own host and
// accountId "anonymous". These tests run Handle the way the Lambda runtime
// does (JSON in, JSON out) on the sample events in events/, which
// events/generate.py writes in the shapes AWS documents.

// sampleSecret and the long tolerance are events/env.json's, so the samples'
// fixed timestamp keeps verifying.
const sampleSecret = "whsec_hookledger_sample_only"

// urlHost is the function URL host of the sample event.
const urlHost = "abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws"

func sampleSources() map[string]source.Source {
	return map[string]source.Source{
		"stripe": {Config: webhook.Config{Provider: "stripe", Tolerance: "876000h"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:" + sampleSecret}}}},
		"square": {Config: webhook.Config{Provider: "square"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:sq-signature-key"}}}},
		"twilio": {Config: webhook.Config{Provider: "twilio"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:twilio-auth-token"}}}},
	}
}

// sample reads an event from events/ as a generic JSON object, so a test can
// change any field before invoking.
func sample(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../../events/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// invoke hands the event to Handle through aws-lambda-go's handler, as the
// Lambda runtime does, and decodes the answer as a function URL reads it.
func invoke(t *testing.T, h *receiver.Handler, event map[string]any) events.LambdaFunctionURLResponse {
	t.Helper()
	payload, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	out, err := lambda.NewHandler(h.Handle).Invoke(t.Context(), payload)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatalf("answer %s is not a JSON object: %v", out, err)
	}
	for _, k := range []string{"statusCode", "headers", "body"} {
		if _, ok := raw[k]; !ok {
			t.Fatalf("answer %s has no %q: neither front door could map it to an HTTP response", out, k)
		}
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.IsBase64Encoded {
		t.Fatalf("answer %s is base64-encoded; the receiver answers text", out)
	}
	return resp
}

// The HTTP API sample is accepted; the same event through the function URL
// is a duplicate: both front doors share one ledger key space, so a stack
// with both (FrontDoor=Both) records each event once whichever way it came.
func TestSampleEventsOfBothFrontDoors(t *testing.T) {
	t.Parallel()
	f := setupWith(t, sampleSources(), &source.Secrets{})
	if resp := invoke(t, f.h, sample(t, "receiver-stripe.json")); resp.StatusCode != 200 || resp.Body != `{"status":"accepted"}` {
		t.Fatalf("HTTP API sample: %d %s", resp.StatusCode, resp.Body)
	}
	resp := invoke(t, f.h, sample(t, "receiver-function-url-stripe.json"))
	if resp.StatusCode != 200 || resp.Body != `{"status":"duplicate"}` || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("function URL sample of the same event: %d %v %s, want 200 duplicate", resp.StatusCode, resp.Headers, resp.Body)
	}
	if n := f.items(t); n != 2 {
		t.Errorf("%d ledger items, want 2 (one record, one payload)", n)
	}
}

// What only a function URL lets through (API Gateway's route refuses it
// before the receiver runs) is refused by the receiver itself, before any
// write: other methods, other paths. The rest behaves as through the API.
func TestFunctionURLRequests(t *testing.T) {
	t.Parallel()
	body := `{"id":"evt_furl","object":"event","type":"invoice.paid","data":{"object":{"id":"in_furl"}}}`
	for _, c := range []struct {
		name   string
		change func(ev map[string]any)
		status int
		stored bool
	}{
		{"POST", func(map[string]any) {}, 200, true},
		{"GET", func(ev map[string]any) { ctxHTTP(ev)["method"] = http.MethodGet }, 405, false},
		{"root path", func(ev map[string]any) { ev["rawPath"] = "/" }, 404, false},
		{"deeper path", func(ev map[string]any) { ev["rawPath"] = "/webhooks/stripe/acme/extra" }, 404, false},
		{"unknown tenant", func(ev map[string]any) { ev["rawPath"] = "/webhooks/stripe/nobody" }, 404, false},
		{"trailing slash", func(ev map[string]any) { ev["rawPath"] = "/webhooks/stripe/acme/" }, 200, true},
		{"base64 body", func(ev map[string]any) {
			ev["body"], ev["isBase64Encoded"] = base64.StdEncoding.EncodeToString([]byte(body)), true
		}, 200, true},
		{"bad signature", func(ev map[string]any) { headersOf(ev)["stripe-signature"] = "t=1767225600,v1=00" }, 401, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setupWith(t, sampleSources(), &source.Secrets{})
			ev := sample(t, "receiver-function-url-stripe.json")
			sv, _ := webhook.New(webhook.Config{Provider: "stripe"})
			hdr, err := sv.Sign(webhook.Message{Body: []byte(body), Now: f.clock.Now()}, sampleSecret)
			if err != nil {
				t.Fatal(err)
			}
			ev["body"] = body
			headersOf(ev)["stripe-signature"] = hdr.Get("Stripe-Signature")
			c.change(ev)
			resp := invoke(t, f.h, ev)
			if resp.StatusCode != c.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, resp.Body, c.status)
			}
			_, err = f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_furl"})
			if stored := err == nil; stored != c.stored {
				t.Errorf("record stored=%v (%v), want %v", stored, err, c.stored)
			}
		})
	}
}

// Square and Twilio sign the URL they post to. Behind a function URL with no
// proxy in front, that is https://<url-id>.lambda-url.<region>.on.aws/...,
// which the receiver rebuilds from the event's domainName, rawPath and
// rawQueryString: no "url" needs configuring. A signature over another URL
// (the API's, say) is refused.
func TestURLSigningProvidersThroughAFunctionURL(t *testing.T) {
	t.Parallel()
	f := setupWith(t, sampleSources(), &source.Secrets{})
	sq, _ := webhook.New(webhook.Config{Provider: "square"})
	tw, _ := webhook.New(webhook.Config{Provider: "twilio"})
	for _, c := range []struct {
		name, path, query, signedURL, secret string
		v                                    *webhook.Verifier
		msg                                  webhook.Message
		status                               int
	}{
		{"square", "/webhooks/square/acme", "", "https://" + urlHost + "/webhooks/square/acme", "sq-signature-key", sq,
			webhook.Message{Body: []byte(`{"merchant_id":"M1","type":"payment.updated","event_id":"sq-evt-1","data":{}}`)}, 200},
		{"square signed for the API's URL", "/webhooks/square/acme", "", "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/webhooks/square/acme", "sq-signature-key", sq,
			webhook.Message{Body: []byte(`{"merchant_id":"M1","type":"payment.updated","event_id":"sq-evt-2","data":{}}`)}, 401},
		{"twilio with a query string", "/webhooks/twilio/acme", "region=eu", "https://" + urlHost + "/webhooks/twilio/acme?region=eu", "twilio-auth-token", tw,
			webhook.Message{ID: "tw-idem-1", Body: []byte("CallSid=CA0001&From=%2B15550100&To=%2B15550199")}, 200},
	} {
		ev := sample(t, "receiver-function-url-stripe.json")
		c.msg.URL, c.msg.Now = c.signedURL, f.clock.Now()
		hdr, err := c.v.Sign(c.msg, c.secret)
		if err != nil {
			t.Fatal(err)
		}
		headers := map[string]any{"host": urlHost, "x-forwarded-proto": "https", "x-forwarded-port": "443"}
		for k := range hdr {
			headers[strings.ToLower(k)] = hdr.Get(k)
		}
		ev["headers"], ev["rawPath"], ev["rawQueryString"], ev["body"] = headers, c.path, c.query, string(c.msg.Body)
		ctxHTTP(ev)["path"] = c.path
		if resp := invoke(t, f.h, ev); resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, resp.Body, c.status)
		}
	}
}

func headersOf(ev map[string]any) map[string]any { return ev["headers"].(map[string]any) }

func ctxHTTP(ev map[string]any) map[string]any {
	return ev["requestContext"].(map[string]any)["http"].(map[string]any)
}
