package main

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/webhook"
)

// TestSendDefaultsSourceToProvider: --provider square posted to the
// /webhooks/stripe/... path; the source now defaults to the provider's name.
func TestSendDefaultsSourceToProvider(t *testing.T) {
	t.Parallel()
	paths := make(chan string, 4)
	srv := newPathRecorder(t, paths)
	for _, tc := range []struct {
		args []string
		path string
	}{
		{[]string{"--provider", "square"}, "/webhooks/square/acme"},
		{nil, "/webhooks/stripe/acme"},
		{[]string{"--provider", "square", "--source", "sq"}, "/webhooks/sq/acme"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"send", "--secret", "s", "--base", srv, "--id", "evt_1"}, tc.args...)
		if code := run(t.Context(), args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		if got := <-paths; got != tc.path {
			t.Errorf("%v posted to %s, want %s", tc.args, got, tc.path)
		}
	}
	checkUsage(t, []usageCase{
		{[]string{"send", "--secret", "s", "--source", ""}, "--source and --tenant must not be empty"},
		{[]string{"send", "--secret", "s", "--tenant", ""}, "--source and --tenant must not be empty"},
		{[]string{"send", "--secret", "s", "body.json"}, "unexpected argument"},
	})
	var out bytes.Buffer
	run(t.Context(), []string{"send", "--help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "default: the --provider's name") {
		t.Errorf("send --help does not say what --source defaults to:\n%s", out.String())
	}
}

// newPathRecorder serves a receiver stand-in that answers 200 and sends each
// request's path to paths; it returns its base URL.
func newPathRecorder(t *testing.T, paths chan<- string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		w.Header().Set("X-Hookledger-Result", "accepted")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSendPrintsKey: send printed only the answers, never the idempotency
// key it generated, so the event could not be inspected.
func TestSendPrintsKey(t *testing.T) {
	t.Parallel()
	paths := make(chan string, 4)
	srv := newPathRecorder(t, paths)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--base", srv, "--body", `{"id":"evt_abc","type":"invoice.paid"}`},
			`sending stripe/acme key evt_abc (type "invoice.paid"); inspect it with: hookledger inspect --source stripe --tenant acme evt_abc`},
		{[]string{"--base", srv, "--provider", "github", "--id", "d-1", "--tenant", "t1"},
			`sending github/t1 key d-1 (type "push")`},
		{[]string{"--url", srv + "/webhooks/shop/t2", "--provider", "shopify", "--id", "e-9"},
			`sending shop/t2 key e-9 (type "orders/create"); inspect it with: hookledger inspect --source shop --tenant t2 e-9`},
		{[]string{"--url", srv + "/hook", "--body", `{"id":"evt_x"}`},
			`sending key evt_x (type "") to ` + srv + "/hook"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"send", "--secret", "s"}, tc.args...)
		if code := run(t.Context(), args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		<-paths
		first, _, _ := strings.Cut(out.String(), "\n")
		if !strings.HasPrefix(first, tc.want) {
			t.Errorf("%v: first line %q, want %q", tc.args, first, tc.want)
		}
	}
}

// TestSendRejectionHints: a 401 or 404 from the receiver came with no word
// on what to fix.
func TestSendRejectionHints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		result string
		hint   string
	}{
		{401, "rejected_signature", "check that --secret is the tenant's signing secret in HOOKLEDGER_SOURCES (the receiver's log has the reason)"},
		{404, "rejected_unknown", `source "stripe" or tenant "acme" not in HOOKLEDGER_SOURCES`},
		{500, "error", ""},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Hookledger-Result", tc.result)
			w.WriteHeader(tc.status)
		}))
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"send", "--secret", "s", "--base", srv.URL}, &out, &errb)
		srv.Close()
		if code != 1 {
			t.Errorf("%d: exit %d, want 1", tc.status, code)
		}
		if tc.hint == "" {
			if strings.Contains(errb.String(), "HOOKLEDGER_SOURCES") {
				t.Errorf("%d: unexpected hint %q", tc.status, errb.String())
			}
		} else if !strings.Contains(errb.String(), tc.hint) {
			t.Errorf("%d: stderr %q, want the hint %q", tc.status, errb.String(), tc.hint)
		}
	}
}

// TestSendSampleFitsProvider: --provider shopify (or any non-Stripe
// provider) sent a Stripe invoice.paid body and type. Each provider's sample
// must verify, with a key and the provider's kind of type, by the
// provider's default config.
func TestSendSampleFitsProvider(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		"standard-webhooks": "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123")),
		"svix":              "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123")),
		"twitch":            "0123456789abcdef",
	}
	wantType := map[string]string{"stripe": "invoice.paid", "github": "push", "shopify": "orders/create", "gitlab": "Push Hook", "paddle": "transaction.completed", "square": "payment.updated"}
	for _, p := range webhook.Providers() {
		if p == "twilio" {
			continue // a form body signed through the URL: send needs --body
		}
		v, err := webhook.New(webhook.Config{Provider: p})
		if err != nil {
			t.Fatal(err)
		}
		secret := cmp.Or(secrets[p], "s")
		now := time.Now()
		body, typ := sampleEvent(p, now)
		const u = "http://127.0.0.1:8080/webhooks/x/acme"
		hdr, err := v.Sign(webhook.Message{ID: "id-1", Type: typ, Body: body, URL: u, Now: now}, secret)
		if err != nil {
			t.Errorf("%s: sign: %v", p, err)
			continue
		}
		ev, err := v.Verify(&webhook.Request{Method: http.MethodPost, URL: u, Header: hdr, Body: body}, []string{secret}, now)
		if err != nil || ev.ID == "" {
			t.Errorf("%s: sample %s: %+v, %v", p, body, ev, err)
		}
		if w, ok := wantType[p]; ok && (typ != w || ev.Type != w) {
			t.Errorf("%s: sample type %q, verified type %q, want %q", p, typ, ev.Type, w)
		}
	}
}

// TestShopifyDeliveryHeaders: sign and send --provider shopify left out the
// shop-domain and API-version headers Shopify's own library requires, so a
// delivery they made was not what Shopify sends.
func TestShopifyDeliveryHeaders(t *testing.T) {
	t.Parallel()
	want := []string{"X-Shopify-Hmac-Sha256", "X-Shopify-Topic", "X-Shopify-Shop-Domain", "X-Shopify-Api-Version",
		"X-Shopify-Webhook-Id", "X-Shopify-Event-Id", "X-Shopify-Triggered-At"}

	code, out, errs := signCLI("--provider", "shopify", "--secret", "s", "--now", "1700000000", "--id", "e-1", "--type", "orders/create", "--body", `{"id":1}`)
	if code != 0 {
		t.Fatalf("sign: exit %d, stderr %q", code, errs)
	}
	for _, name := range want {
		if !strings.Contains(out, "\n"+name+": ") && !strings.HasPrefix(out, name+": ") {
			t.Errorf("sign output lacks %s:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "X-Shopify-Triggered-At: 2023-11-14T22:13:20Z\n") {
		t.Errorf("sign output's X-Shopify-Triggered-At is not --now:\n%s", out)
	}

	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("X-Hookledger-Result", "accepted")
	}))
	t.Cleanup(srv.Close)
	var sout, serr bytes.Buffer
	if code := run(t.Context(), []string{"send", "--provider", "shopify", "--secret", "s", "--base", srv.URL}, &sout, &serr); code != 0 {
		t.Fatalf("send: exit %d, stderr %q", code, serr.String())
	}
	h := <-got
	for _, name := range want {
		if h.Get(name) == "" {
			t.Errorf("send posted no %s: %v", name, h)
		}
	}
}

// TestShopifySampleIsAnOrder: send --provider shopify's sample had no
// line_items, so an orders/create handler failed on the first thing it
// reads. It is now an order as Shopify sends one: a customer, totals, line
// items with SKU, quantity and price, and the fields InOrder(ShopifyResource)
// orders by.
func TestShopifySampleIsAnOrder(t *testing.T) {
	t.Parallel()
	now := time.Now()
	body, typ := sampleEvent("shopify", now)
	var o struct {
		ID         int64  `json:"id"`
		Email      string `json:"email"`
		Currency   string `json:"currency"`
		TotalPrice string `json:"total_price"`
		Items      []struct {
			ID       int64  `json:"id"`
			SKU      string `json:"sku"`
			Quantity int    `json:"quantity"`
			Price    string `json:"price"`
		} `json:"line_items"`
	}
	if err := json.Unmarshal(body, &o); err != nil || typ != "orders/create" || o.ID == 0 || o.Email == "" || o.Currency == "" || o.TotalPrice == "" {
		t.Fatalf("sample %s (%s): %+v %v", body, typ, o, err)
	}
	if len(o.Items) == 0 {
		t.Fatalf("sample has no line_items: %s", body)
	}
	for _, it := range o.Items {
		if it.ID == 0 || it.SKU == "" || it.Quantity <= 0 || it.Price == "" {
			t.Errorf("line item %+v: want an id, a SKU, a quantity and a price", it)
		}
	}
	p, err := hookledger.ShopifyResource(&hookledger.Event{Body: body})
	if err != nil || p.Resource == "" || !p.At.Equal(now.Truncate(time.Second)) {
		t.Errorf("ShopifyResource: %+v %v, want the order's id and updated_at (now)", p, err)
	}
}
