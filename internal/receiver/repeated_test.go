package receiver_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/webhook"
)

const shopifySecret = "shpss_test_acme"

// TestAmbiguousDeliveriesAre400AndTouchNothing: a delivery whose key or type
// could be read two ways (a repeated header, in API Gateway's comma-joined
// form; both Shopify spellings disagreeing; an id of the wrong JSON kind or
// given twice) is answered 400 before anything is written.
func TestAmbiguousDeliveriesAre400AndTouchNothing(t *testing.T) {
	t.Parallel()
	shop, err := webhook.New(webhook.Config{Provider: "shopify"})
	if err != nil {
		t.Fatal(err)
	}
	f := setupWith(t, map[string]source.Source{
		"shopify": {Config: webhook.Config{Provider: "shopify"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:" + shopifySecret}}}},
	}, &source.Secrets{})
	github := func(id string) events.APIGatewayV2HTTPRequest {
		return f.request(t, f.github, "/webhooks/github/acme", githubSecret, webhook.Message{ID: id, Type: "push", Body: []byte(`{"ref":"refs/heads/main"}`)})
	}
	stripe := func(body string) events.APIGatewayV2HTTPRequest {
		return f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: []byte(body)})
	}
	shopify := func() events.APIGatewayV2HTTPRequest {
		return f.request(t, shop, "/webhooks/shopify/acme", shopifySecret, webhook.Message{ID: "e-1", Type: "orders/create", Body: []byte(`{"id":1}`)})
	}
	tests := []struct {
		name string
		req  func() events.APIGatewayV2HTTPRequest
		body string
	}{
		{"two X-GitHub-Delivery headers, joined by API Gateway", func() events.APIGatewayV2HTTPRequest {
			r := github("a")
			r.Headers["x-github-delivery"] = "a,b"
			return r
		}, `{"error":"repeated header X-GitHub-Delivery"}`},
		{"two X-GitHub-Event headers", func() events.APIGatewayV2HTTPRequest {
			r := github("a")
			r.Headers["x-github-event"] = "push,push"
			return r
		}, `{"error":"repeated header X-GitHub-Event"}`},
		{"two Stripe-Signature headers", func() events.APIGatewayV2HTTPRequest {
			r := stripe(string(stripeBody("evt_rep")))
			r.Headers["stripe-signature"] += "," + r.Headers["stripe-signature"]
			return r
		}, `{"error":"repeated header Stripe-Signature"}`},
		{"Shopify's two spellings of the event id disagree", func() events.APIGatewayV2HTTPRequest {
			r := shopify()
			r.Headers["shopify-event-id"] = "e-2"
			return r
		}, `{"error":"repeated header X-Shopify-Event-Id"}`},
		{"a number for Stripe's string id", func() events.APIGatewayV2HTTPRequest {
			return stripe(`{"id":123,"type":"invoice.paid"}`)
		}, `{"error":"malformed body"}`},
		{"two id members", func() events.APIGatewayV2HTTPRequest {
			return stripe(`{"id":"evt_a","type":"invoice.paid","id":"evt_b"}`)
		}, `{"error":"malformed body"}`},
		{"two type members", func() events.APIGatewayV2HTTPRequest {
			return stripe(`{"id":"evt_a","type":"invoice.paid","type":"invoice.voided"}`)
		}, `{"error":"malformed body"}`},
	}
	for _, tt := range tests {
		resp := f.handle(t, tt.req())
		if resp.StatusCode != 400 || resp.Body != tt.body || resp.Headers["X-Hookledger-Result"] != "rejected_malformed" {
			t.Errorf("%s: got %d %s %v, want 400 %s", tt.name, resp.StatusCode, resp.Body, resp.Headers, tt.body)
		}
	}
	if snap := f.meter.Snapshot(); f.meter.Service("DynamoDB") != 0 || f.meter.Service("SQS") != 0 {
		t.Errorf("refused deliveries reached AWS: %v", snap)
	}
	if n := f.items(t); n != 0 {
		t.Errorf("table holds %d items after refusals", n)
	}
	if n := f.queued(t); n != 0 {
		t.Errorf("queue holds %d messages after refusals", n)
	}

	// Refused, {"id":123} did not take the key "123" from {"id":"123"}.
	if resp := f.handle(t, stripe(`{"id":"123","type":"invoice.paid"}`)); resp.StatusCode != 200 || resp.Body != `{"status":"accepted"}` {
		t.Errorf(`{"id":"123"} after {"id":123}: got %d %s, want accepted`, resp.StatusCode, resp.Body)
	}
	// Both of Shopify's formats at once, agreeing, is one delivery.
	r := shopify()
	for k, v := range r.Headers {
		if name, ok := strings.CutPrefix(k, "x-shopify-"); ok {
			r.Headers["shopify-"+name] = v
		}
	}
	if resp := f.handle(t, r); resp.StatusCode != 200 || resp.Body != `{"status":"accepted"}` {
		t.Errorf("Shopify with both header formats: got %d %s, want accepted", resp.StatusCode, resp.Body)
	}
}
