package receiver_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// fuzzLedger and fuzzQueue count the receiver's writes; a fake is enough
// here because the property is about which requests write at all (the
// emulator tests prove what the writes do).
type fuzzLedger struct {
	mu              sync.Mutex
	creates, stores int
	guards          int // replay-guard writes (on by default for GitHub)
}

func (f *fuzzLedger) Create(_ context.Context, ev ledger.NewEvent) (ledger.Record, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	return ledger.Record{Key: ev.Key, Status: ledger.Received, BodySHA256: ev.BodySHA256, CreatedAt: time.Now()}, true, nil
}

func (f *fuzzLedger) PutPayload(context.Context, ledger.Key, []byte, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stores++
	return nil
}

func (f *fuzzLedger) ClaimBody(_ context.Context, id ledger.Key, _ ledger.Identity) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.guards++
	return id.ID, nil
}

type fuzzQueue struct {
	mu    sync.Mutex
	sends int
}

func (q *fuzzQueue) Send(context.Context, queue.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sends++
	return nil
}

const (
	fuzzStripeAcme   = "whsec_fuzz_acme_0123456789"
	fuzzStripeGlobex = "whsec_fuzz_globex_0123456789"
	fuzzGitHub       = "gh-fuzz-acme"
)

var fuzzNow = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func fuzzHandler(t testing.TB) (*receiver.Handler, *fuzzLedger, *fuzzQueue) {
	t.Helper()
	reg, err := source.NewRegistry(map[string]source.Source{
		"stripe": {Config: webhook.Config{Provider: "stripe"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:" + fuzzStripeAcme}}, "globex": {Secrets: []string{"literal:" + fuzzStripeGlobex}}}},
		"github": {Config: webhook.Config{Provider: "github"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:" + fuzzGitHub}}}},
	}, &source.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	l, q := &fuzzLedger{}, &fuzzQueue{}
	h := &receiver.Handler{Sources: reg, Ledger: l, Queue: q, MaxBody: 4096, Now: func() time.Time { return fuzzNow }}
	return h, l, q
}

// The sign modes of FuzzReceiver (mode % 4).
const (
	fuzzUnsigned = iota
	fuzzStripeSigned
	fuzzGitHubSigned
	fuzzWrongSecret
)

// FuzzReceiver drives the receiver's whole request path — path parsing,
// method, body decoding, size limit, verification, key extraction — with
// arbitrary paths, headers, bodies and base64 flags, some requests signed
// with a tenant's real secret. Properties: it never panics (a recovered
// panic would answer 500), never answers 2xx to a request not signed with
// the tenant's secret or with a body that is not UTF-8, and a refused
// request never reaches the ledger or the queue.
func FuzzReceiver(f *testing.F) {
	stripeOK := []byte(`{"id":"evt_fuzz_1","type":"invoice.paid","data":{"object":{"amount_paid":4900,"currency":"usd"}}}`)
	f.Add("/webhooks/stripe/acme", "content-type: application/json", stripeOK, false, uint8(fuzzStripeSigned))
	f.Add("/webhooks/stripe/acme", "content-type: application/json", stripeOK, true, uint8(fuzzStripeSigned|4))
	f.Add("/webhooks/stripe/globex", "", stripeOK, false, uint8(fuzzStripeSigned))
	f.Add("/webhooks/stripe/acme", "stripe-signature: t=1767366245,v1=00", stripeOK, false, uint8(fuzzUnsigned))
	f.Add("/webhooks/stripe/acme", "", stripeOK, false, uint8(fuzzWrongSecret))
	f.Add("/webhooks/stripe/acme", "", stripeOK, false, uint8(fuzzStripeSigned|8))
	f.Add("/webhooks/github/acme", "x-github-delivery: 72d3162e\nx-github-event: push", []byte(`{"ref":"main"}`), false, uint8(fuzzGitHubSigned))
	f.Add("/webhooks/stripe/ac#me", "", stripeOK, false, uint8(fuzzStripeSigned|4))
	f.Add("/webhooks/stripe/acme/x", "", stripeOK, false, uint8(fuzzStripeSigned))
	f.Add("/webhooks//acme", "", stripeOK, false, uint8(fuzzStripeSigned))
	f.Add("/webhooks/stripe/acme", "", []byte("{\"id\":\"evt_\xff\"}"), false, uint8(fuzzStripeSigned))
	f.Add("/webhooks/stripe/acme", "", []byte("{\"id\":\"evt_\xff\"}"), true, uint8(fuzzStripeSigned))
	f.Add("/webhooks/stripe/acme", "", []byte("!!not base64"), true, uint8(fuzzStripeSigned|16))
	f.Add("/webhooks/stripe/acme", "", []byte(`{"id":"a"} {}`), false, uint8(fuzzStripeSigned))
	f.Add("/webhooks/stripe/acme", "", []byte(strings.Repeat("a", 5000)), false, uint8(fuzzStripeSigned))
	f.Add("/webhooks/stripe/acme", "stripe-signature: t=1,v1=a,v1=b\nstripe-signature: x", []byte(`{}`), false, uint8(fuzzUnsigned))
	f.Add("", "", []byte(nil), false, uint8(0))

	f.Fuzz(func(t *testing.T, path, hdrs string, body []byte, b64 bool, mode uint8) {
		h, l, q := fuzzHandler(t)
		req := events.APIGatewayV2HTTPRequest{RawPath: path, Headers: map[string]string{},
			RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "hooks.example.com",
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}}}
		if mode&8 != 0 {
			req.RequestContext.HTTP.Method = http.MethodGet
		}
		if mode&4 != 0 { // as API Gateway's route parameters, not the raw path
			if parts := strings.Split(strings.Trim(path, "/"), "/"); len(parts) == 3 {
				req.PathParameters = map[string]string{"source": parts[1], "tenant": parts[2]}
			}
		}
		for line := range strings.SplitSeq(hdrs, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				req.Headers[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		signed := false
		var v *webhook.Verifier
		var secret string
		msg := webhook.Message{Body: body, Now: fuzzNow, ID: req.Headers["x-github-delivery"], Type: "push"}
		switch mode % 4 {
		case fuzzStripeSigned:
			v, _ = webhook.New(webhook.Config{Provider: "stripe"})
			secret, signed = fuzzStripeAcme, true
		case fuzzGitHubSigned:
			v, _ = webhook.New(webhook.Config{Provider: "github"})
			secret, signed = fuzzGitHub, true
			if msg.ID == "" {
				msg.ID = "fuzz-delivery"
			}
		case fuzzWrongSecret:
			v, _ = webhook.New(webhook.Config{Provider: "stripe"})
			secret = "whsec_not_any_tenants"
		}
		if v != nil {
			hdr, err := v.Sign(msg, secret)
			if err != nil {
				t.Skip()
			}
			for k := range hdr {
				req.Headers[strings.ToLower(k)] = hdr.Get(k)
			}
		}
		req.Body = string(body)
		raw := body
		if b64 {
			req.IsBase64Encoded = true
			if mode&16 == 0 {
				req.Body = base64.StdEncoding.EncodeToString(body)
			} else if dec, err := base64.StdEncoding.DecodeString(string(body)); err == nil {
				raw = dec
			} else {
				raw = nil
			}
		}

		resp, err := h.Handle(context.Background(), req)
		if err != nil {
			t.Fatalf("Handle returned an error: %v", err)
		}
		if resp.StatusCode == http.StatusInternalServerError {
			t.Fatalf("500 (a recovered panic) for path %q headers %q body %q", path, hdrs, body)
		}
		ok := resp.StatusCode >= 200 && resp.StatusCode < 300
		wrote := l.creates+l.stores+l.guards+q.sends > 0
		if ok && !signed {
			t.Fatalf("answered %d to a request not signed with the tenant's secret (mode %d, path %q)", resp.StatusCode, mode, path)
		}
		if ok && !utf8.Valid(raw) {
			t.Fatalf("answered %d to a body that is not UTF-8: %q", resp.StatusCode, raw)
		}
		if resp.StatusCode >= 400 && wrote {
			t.Fatalf("answered %d but wrote: %d creates, %d payloads, %d guard items, %d sends", resp.StatusCode, l.creates, l.stores, l.guards, q.sends)
		}
		if ok && resp.Headers["X-Hookledger-Result"] != string(receiver.Handshake) && l.creates != 1 {
			t.Fatalf("answered %d after %d ledger creates, want exactly 1", resp.StatusCode, l.creates)
		}
		if strings.Contains(resp.Body, "ledger:") || strings.Contains(resp.Body, "verify ") {
			t.Fatalf("answer leaks internal error text: %s", resp.Body)
		}
	})
}

// TestInvalidUTF8BodyRejected is the regression test for a key collision:
// the JSON decoder turns each invalid UTF-8 byte into U+FFFD, so the event
// ids "evt_\xff" and "evt_\xfe" were both read as "evt_\uFFFD" and the
// second event was answered duplicate and never processed. A correctly
// signed body that is not UTF-8 is now malformed (400) and writes nothing;
// valid non-ASCII ids are still accepted.
func TestInvalidUTF8BodyRejected(t *testing.T) {
	t.Parallel()
	sv, _ := webhook.New(webhook.Config{Provider: "stripe"})
	for _, tc := range []struct {
		id   string
		b64  bool
		want int
	}{
		{"evt_\xff", false, http.StatusBadRequest},
		{"evt_\xfe", true, http.StatusBadRequest},
		{"evt_\xc3\x28", false, http.StatusBadRequest},
		{"evt_ünïcødé", false, http.StatusOK},
	} {
		h, l, q := fuzzHandler(t)
		body := []byte(`{"id":"` + tc.id + `","type":"invoice.paid"}`)
		hdr, err := sv.Sign(webhook.Message{Body: body, Now: fuzzNow}, fuzzStripeAcme)
		if err != nil {
			t.Fatal(err)
		}
		req := events.APIGatewayV2HTTPRequest{RawPath: "/webhooks/stripe/acme", Headers: map[string]string{}, Body: string(body),
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}}}
		if tc.b64 {
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
		for k := range hdr {
			req.Headers[strings.ToLower(k)] = hdr.Get(k)
		}
		resp, _ := h.Handle(t.Context(), req)
		if resp.StatusCode != tc.want {
			t.Errorf("id %q: status %d, want %d (%s)", tc.id, resp.StatusCode, tc.want, resp.Body)
		}
		if wrote := l.creates+l.stores+q.sends > 0; wrote != (tc.want == http.StatusOK) {
			t.Errorf("id %q: wrote %d creates, %d payloads, %d sends", tc.id, l.creates, l.stores, q.sends)
		}
	}
}
