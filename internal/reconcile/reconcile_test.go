package reconcile

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/providerapi"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
)

// memLedger is an in-memory stand-in for the ledger's Exists, for the unit
// tests of reconcile's own logic (the emulator tests use the real ledger).
type memLedger struct {
	mu   sync.Mutex
	keys map[string]bool
	err  error
}

func (m *memLedger) Exists(_ context.Context, id ledger.Key) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.keys[id.ID], m.err
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	srcs, err := source.Parse([]byte(`{"stripe":{"provider":"stripe","bus_sources":["stripe.test"],"tenants":{"acme":{"secrets":["literal:whsec_1"]},"platform":{"accounts":["*"]}}},
		"github":{"provider":"github","tenants":{"acme":{"secrets":["literal:gh"]}}},
		"shop":{"provider":"shopify","tenants":{"acme":{"secrets":["literal:sh"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{Sources: srcs, Retention: 168 * time.Hour}
	for _, tc := range []struct {
		spec Spec
		want string // "" = valid
	}{
		{Spec{Source: "stripe", Tenant: "acme", Credential: "env:STRIPE"}, ""},
		{Spec{Source: "github", Tenant: "acme", Credential: "env:GH", Hook: "repos/acme/shop/hooks/1", Redeliver: true}, ""},
		{Spec{Source: "github", Tenant: "acme", Credential: "env:GH", Hook: "orgs/acme/hooks/7"}, ""},
		{Spec{Source: "nope", Tenant: "acme", Credential: "literal:x"}, "not in the sources"},
		{Spec{Source: "stripe", Tenant: "globex", Credential: "literal:x"}, "no tenant"},
		{Spec{Source: "shop", Tenant: "acme", Credential: "literal:x"}, "can ask only stripe and github"},
		{Spec{Source: "stripe", Tenant: "acme"}, "no credential"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "sk_live_unprefixed"}, "no scheme"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "arn:aws:secretsmanager:us-east-1:123456789012:secret:x"}, "bare ARN"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Window: "169h"}, "beyond the ledger's retention"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Window: "soon"}, "positive Go duration"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", MinAge: "-1m"}, "min_age"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Window: "2h", MinAge: "3h"}, "not below the window"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", MinAge: "200h"}, "not below the window"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Window: "2h", MinAge: "1h"}, ""},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Hook: "repos/a/b/hooks/1"}, "GitHub settings"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Types: []string{"in*voice"}}, "want an event type"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "ftp://x"}, "api_url"},
		// The credential goes to api_url and what it answers is signed with
		// the tenant's secret: only the provider's own API, a loopback stub,
		// or a host the operator marks as trusted.
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "https://api.stripe.com"}, ""},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "https://API.Stripe.com:443/"}, ""},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "https://stripe-proxy.example.com"}, `"trust_api_url": true`},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "https://api.stripe.com.example.net"}, "not the provider's API (api.stripe.com)"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "https://api.stripe.com:8443"}, "not the provider's API"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "https://api.github.com"}, "not the provider's API (api.stripe.com)"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "https://stripe-proxy.example.com", TrustAPIURL: true}, ""},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "http://stripe-proxy.example.com", TrustAPIURL: true}, "clear text"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: "http://127.0.0.1:8080"}, ""},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", TrustAPIURL: true}, "without an api_url"},
		{Spec{Source: "github", Tenant: "acme", Credential: "literal:x", Hook: "repos/a/b/hooks/1", APIURL: "https://api.github.com"}, ""},
		{Spec{Source: "github", Tenant: "acme", Credential: "literal:x", Hook: "repos/a/b/hooks/1", APIURL: "https://ghe.example.com/api/v3"}, "GitHub Enterprise Server"},
		{Spec{Source: "github", Tenant: "acme", Credential: "literal:x", Hook: "repos/a/b/hooks/1", APIURL: "https://ghe.example.com/api/v3", TrustAPIURL: true}, ""},
		{Spec{Source: "github", Tenant: "acme", Credential: "literal:x", Hook: "acme/shop/1"}, "want repos/OWNER/REPO/hooks/ID"},
		{Spec{Source: "github", Tenant: "acme", Credential: "literal:x", Hook: "repos/a/b/hooks/1", All: true}, "Stripe settings"},
		{Spec{Source: "github", Tenant: "acme", Credential: "literal:x", Hook: "repos/a/b/hooks/1", Thin: true}, "Stripe settings"},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Thin: true}, ""},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Thin: true, Account: "acct_1"}, ""},
		{Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Thin: true, All: true}, "lists every thin event anyway"},
		// A tenant without secrets has no HTTP door to feed through.
		{Spec{Source: "stripe", Tenant: "platform", Credential: "literal:x"}, "takes events from the bus only"},
	} {
		err := c.Check(tc.spec)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
	if _, err := ParseSpecs([]byte(`[{"source":"stripe","tenant":"acme","credential":"x","windw":"1h"}]`)); err == nil || !strings.Contains(err.Error(), "windw") {
		t.Fatalf("unknown field: %v", err)
	}
	// The default window: the provider's retention, capped by the ledger's.
	if w, _ := c.window(Spec{}, "stripe"); w != 167*time.Hour {
		t.Fatalf("stripe default window %v", w)
	}
	if w, _ := c.window(Spec{}, "github"); w != 72*time.Hour {
		t.Fatalf("github default window %v", w)
	}
	// A source's own retention caps its window, not the global one: a
	// window past it would feed events whose records expired.
	srcs["stripe"] = source.Source{Config: srcs["stripe"].Config, Retention: "96h", BusSources: srcs["stripe"].BusSources, Tenants: srcs["stripe"].Tenants}
	reg, err := source.NewRegistry(srcs, &source.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	c = &Config{Sources: srcs, Registry: reg, Retention: 168 * time.Hour}
	if w, _ := c.window(Spec{Source: "stripe"}, "stripe"); w != 95*time.Hour {
		t.Errorf("stripe default window with the source's 96h: %v, want 95h", w)
	}
	if err := c.Check(Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Window: "100h"}); err == nil || !strings.Contains(err.Error(), "retention 96h0m0s") {
		t.Errorf("a window past the source's retention: %v", err)
	}
	if w, _ := c.window(Spec{Source: "github"}, "github"); w != 72*time.Hour {
		t.Errorf("github (HOOKLEDGER_RETENTION 168h): %v, want 72h", w)
	}
	// The providers refuse a foreign host on their own, whoever builds them.
	if _, err := NewStripe(StripeOptions{APIKey: "sk_x", BaseURL: "https://stripe-proxy.example.com"}); err == nil || !strings.Contains(err.Error(), "trust_api_url") {
		t.Errorf("stripe foreign base URL: %v", err)
	}
	if _, err := NewGitHub(GitHubOptions{Token: "t", Hook: "orgs/a/hooks/1", BaseURL: "https://ghe.example.com/api/v3"}); err == nil || !strings.Contains(err.Error(), "GitHub Enterprise Server") {
		t.Errorf("github foreign base URL: %v", err)
	}
	if _, err := NewGitHub(GitHubOptions{Token: "t", Hook: "orgs/a/hooks/1", BaseURL: "https://ghe.example.com/api/v3", TrustBaseURL: true}); err != nil {
		t.Errorf("github trusted base URL: %v", err)
	}
	for _, key := range []string{"pk_live_x", "whsec_x", ""} {
		if _, err := NewStripe(StripeOptions{APIKey: key}); err == nil {
			t.Errorf("stripe key %q accepted", key)
		}
	}
}

// A JSON key/value secret as the API credential gets the credential's own
// message, and neither it nor an api_url with credentials is quoted.
// Before, the first got the signing secrets' message, the second was
// quoted whole.
func TestCredentialErrorsNeverQuoteAValue(t *testing.T) {
	t.Parallel()
	srcs, err := source.Parse([]byte(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_1"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	secrets := &source.Secrets{SecretsManager: credentialStore{"stripe-api": `{"api_key":"sk_live_51ReconcileLeakCanary"}`}}
	reg, err := source.NewRegistry(srcs, secrets)
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{Sources: srcs, Registry: reg, Secrets: secrets, Retention: 168 * time.Hour}
	_, err = c.Job(t.Context(), Spec{Source: "stripe", Tenant: "acme", Credential: "secretsmanager:stripe-api"}, true)
	if err == nil || !strings.Contains(err.Error(), "API credential secretsmanager:stripe-api holds a JSON key/value secret; store the API key") ||
		strings.Contains(err.Error(), "ReconcileLeakCanary") {
		t.Fatalf("Job: %v, want the credential's own message, not quoting the value", err)
	}
	for _, u := range []string{"https://user:sk_live_51ReconcileLeakCanary@ghe.example.com/api/v3", "http://ghe.example.com/?token=sk_live_51ReconcileLeakCanary",
		"ftp://sk_live_51ReconcileLeakCanary"} {
		err := c.Check(Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: u})
		if err == nil || !strings.Contains(err.Error(), "api_url") || strings.Contains(err.Error(), "ReconcileLeakCanary") {
			t.Errorf("api_url %q: %v, want an api_url error not quoting it", u, err)
		}
	}
}

// credentialStore is a Secrets Manager holding string secrets by id.
type credentialStore map[string]string

func (m credentialStore) GetSecretValue(_ context.Context, id string) (string, error) {
	return m[id], nil
}

func TestNextLink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ header, want string }{
		{`<https://api.github.com/repos/o/r/hooks/1/deliveries?per_page=2&cursor=v1_123>; rel="next"`, "https://api.github.com/repos/o/r/hooks/1/deliveries?per_page=2&cursor=v1_123"},
		{`<https://a/x?cursor=p>; rel="prev", <https://a/x?cursor=n>; rel="next"`, "https://a/x?cursor=n"},
		{`<https://a/x?cursor=n>; rel="prev next"`, "https://a/x?cursor=n"},
		{`<https://a/x?cursor=p>; rel="prev"`, ""},
		{``, ""},
	} {
		if got := nextLink(tc.header); got != tc.want {
			t.Errorf("nextLink(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
	if sameOrigin("https://evil.example/x", "https://api.github.com") || !sameOrigin("https://api.github.com/x", "https://api.github.com") {
		t.Fatal("sameOrigin")
	}
}

func TestAPIErrorsAndThrottling(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch {
		case strings.Contains(r.URL.Path, "throttled") && n < 3:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case strings.Contains(r.URL.Path, "throttled"):
			w.Write([]byte(`[]`))
		default:
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Bad credentials"}`))
		}
	}))
	defer srv.Close()
	c := &providerapi.Client{Provider: "github", Base: srv.URL, HTTP: srv.Client(), Backoff: time.Millisecond, Hints: githubHints}
	var out []any
	if _, err := c.Get(t.Context(), "/throttled", &out); err != nil || calls != 3 {
		t.Fatalf("throttled: %v after %d calls", err, calls)
	}
	_, err := c.Get(t.Context(), "/denied", &out)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || !strings.Contains(err.Error(), "Bad credentials") || !strings.Contains(err.Error(), "credential reference") {
		t.Fatalf("denied: %v", err)
	}
}

func TestGitHubRebuildFormEncoded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"id":7,"guid":"g-1","event":"issues","request":{"headers":{"content-type":"application/x-www-form-urlencoded","X-GitHub-Hook-ID":"42"},
			"payload":{"action": "opened", "issue": {"title": "a&b"}}}}`))
	}))
	defer srv.Close()
	p, _ := NewGitHub(GitHubOptions{Token: "t", Hook: "repos/a/b/hooks/42", BaseURL: srv.URL, Client: srv.Client()})
	d, err := p.Rebuild(t.Context(), Event{ID: "g-1", Type: "issues", ref: "7"})
	if err != nil {
		t.Fatal(err)
	}
	want := "payload=" + strings.NewReplacer(`{`, "%7B", `}`, "%7D", `"`, "%22", `:`, "%3A", `,`, "%2C", `&`, "%26").Replace(`{"action":"opened","issue":{"title":"a&b"}}`)
	if string(d.Message.Body) != want || d.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || d.Header.Get("X-GitHub-Hook-ID") != "42" || d.Message.ID != "g-1" {
		t.Fatalf("rebuilt %s %v", d.Message.Body, d.Header)
	}
	if _, err := p.Rebuild(t.Context(), Event{ID: "g-2", ref: "7"}); err == nil {
		t.Fatal("a delivery with another guid was accepted")
	}
}

func TestLambdaFeederEvent(t *testing.T) {
	t.Parallel()
	f := &LambdaFeeder{Function: "receiver"}
	hdr := http.Header{}
	hdr.Set("Stripe-Signature", "t=1,v1=ab")
	hdr.Add("X-Multi", "a")
	hdr.Add("X-Multi", "b")
	ev := f.Event("stripe", "acme", hdr, []byte(`{"id":"evt_1"}`))
	if ev.RawPath != "/webhooks/stripe/acme" || ev.PathParameters["source"] != "stripe" || ev.PathParameters["tenant"] != "acme" ||
		ev.RequestContext.HTTP.Method != "POST" || ev.Headers["stripe-signature"] != "t=1,v1=ab" || ev.Headers["x-multi"] != "a,b" ||
		ev.IsBase64Encoded || ev.Body != `{"id":"evt_1"}` {
		t.Fatalf("event %+v", ev)
	}
	if ev := f.Event("s", "t", hdr, []byte{0xff, 0x00}); !ev.IsBase64Encoded || ev.Body != "/wA=" {
		t.Fatalf("binary body %+v", ev)
	}
	h := &HTTPFeeder{Webhook: "https://x.example/webhooks/{source}/{tenant}"}
	if got := h.URL("stripe", "acme"); got != "https://x.example/webhooks/stripe/acme" {
		t.Fatal(got)
	}
	h.Webhook = "https://x.example/"
	if got := h.URL("stripe", "acme"); got != "https://x.example/webhooks/stripe/acme" {
		t.Fatal(got)
	}
}
