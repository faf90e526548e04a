package stripe_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/hookledger/hookledger/hookledgertest"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/stripe"
)

const key = "sk_test_stub"

// notification is a thin event as Stripe delivers it (as the lab's Stripe
// stand-in makes them).
const notification = `{"id":"evt_test_65RC2ax7UF9pMBu1","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered",` +
	`"created":"2026-01-01T00:00:00.000Z","livemode":false,"context":"acct_1CONNECTED",` +
	`"related_object":{"id":"mtr_123","type":"billing.meter","url":"/v1/billing/meters/mtr_123"}}`

func event(t *testing.T, tenant, id string, body []byte) *hookledger.Event {
	t.Helper()
	var head struct{ Type string }
	json.Unmarshal(body, &head)
	return &hookledger.Event{Source: "stripe", Tenant: tenant, ID: id, Type: head.Type, Body: body}
}

func TestParse(t *testing.T) {
	t.Parallel()
	const id = "evt_test_65RC2ax7UF9pMBu1"
	ev := event(t, "acme", id, []byte(notification))
	th, err := stripe.Parse(ev)
	if err != nil {
		t.Fatal(err)
	}
	if th.ID != id || th.Type != "v1.billing.meter.error_report_triggered" || th.Context != "acct_1CONNECTED" || th.Created.IsZero() ||
		th.RelatedObject == nil || *th.RelatedObject != (stripe.RelatedObject{ID: "mtr_123", Type: "billing.meter", URL: "/v1/billing/meters/mtr_123"}) {
		t.Errorf("parsed %+v", th)
	}
	if !stripe.IsThin(ev) {
		t.Error("IsThin = false")
	}
	snapshot := &hookledger.Event{ID: "evt_1", Body: []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{}}}`)}
	if _, err := stripe.Parse(snapshot); !errors.Is(err, stripe.ErrNotThin) || !hookledgertest.IsPermanent(err) {
		t.Errorf("a snapshot event: %v", err)
	}
	if stripe.IsThin(snapshot) {
		t.Error("a snapshot event is thin")
	}
}

func TestNewFetcherRefusesWhatCannotWork(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		o    stripe.Options
		want string
	}{
		{stripe.Options{}, "no API key"},
		{stripe.Options{Key: "pk_test_1"}, "publishable key"},
		{stripe.Options{Keys: map[string]string{"acme": "whsec_1"}}, "webhook signing secret"},
		{stripe.Options{Key: key, BaseURL: "http://stripe.example.com"}, "clear text"},
		{stripe.Options{Key: key, BaseURL: "https://proxy.example.com"}, "TrustBaseURL"},
	} {
		if _, err := stripe.NewFetcher(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error mentioning %q", c.o, err, c.want)
		}
	}
	if _, err := stripe.NewFetcher(stripe.Options{Key: key, BaseURL: "https://proxy.example.com", TrustBaseURL: true}); err != nil {
		t.Errorf("a trusted proxy: %v", err)
	}
	if _, err := stripe.NewFetcher(stripe.Options{Key: key, Client: http.DefaultClient}); err != nil {
		t.Errorf("Stripe's own API: %v", err)
	}
}

// Only a plain path of Stripe's API, a Stripe id and a context of account
// ids are sent with the tenant's key; anything else fails permanently
// before a request. Before, the path check was textual (an escaped "..",
// a query, "//" or "@" reached Stripe's host) and a control character in
// the id or context failed in the HTTP client, retried to the deadline.
func TestFetchSendsOnlyPlainPathsAndIDs(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	f, err := stripe.NewFetcher(stripe.Options{Key: key, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	thin := func(id, context, url string) *hookledger.Event {
		body, _ := json.Marshal(map[string]any{"id": id, "object": "v2.core.event", "type": "x.y", "context": context,
			"related_object": map[string]string{"id": "o", "type": "t", "url": url}})
		return event(t, "acme", id, body)
	}
	for _, u := range []string{"/v1/%2e%2e/v2/core/events", "/v1/x?expand[]=y", "/v1/x?", "//evil.example/v1/x", "/v1//x", "/v1/@evil.example",
		"/v1/x/", "/v1/./x", "/v1/x/..", "/v3/x", "/v1/x#f", "/v1/x\n", "/v1/x y", "v1/x", "/v1"} {
		if _, err := f.FetchObject(t.Context(), thin("evt_1", "", u)); !hookledgertest.IsPermanent(err) {
			t.Errorf("related_object.url %q: %v, want a permanent error", u, err)
		}
	}
	for _, ev := range []*hookledger.Event{thin("evt_1\nX-Evil: 1", "", "/v1/x"), thin("evt_1/../x", "", "/v1/x"), thin("evt_1", "acct_1\r\nX-Evil: 1", "/v1/x"), thin("evt_1", "acct_1//acct_2", "/v1/x")} {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		_, errEvent := f.FetchEvent(ctx, ev)
		_, errObject := f.FetchObject(ctx, ev)
		cancel()
		if !hookledgertest.IsPermanent(errEvent) || !hookledgertest.IsPermanent(errObject) {
			t.Errorf("body %s: %v / %v, want permanent errors", ev.Body, errEvent, errObject)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the API, want none", n)
	}
	if _, err := f.FetchObject(t.Context(), thin("evt_1", "org_1/acct_1", "/v2/core/accounts/acct_1")); err != nil || requests.Load() != 1 {
		t.Errorf("a plain path, id and context: %v, %d requests", err, requests.Load())
	}
}

// A key or BaseURL read from a setting is described, never quoted.
func TestNewFetcherNeverQuotesTheKeyOrURL(t *testing.T) {
	t.Parallel()
	const canary = "sk_live_51FetcherLeakCanary"
	for _, c := range []struct {
		o    stripe.Options
		want string
	}{
		{stripe.Options{Key: canary + "\n"}, "control character (0x0a) at byte 27"},
		{stripe.Options{Keys: map[string]string{"acme": canary + "\r"}}, "control character (0x0d) at byte 27"},
		{stripe.Options{Key: key, BaseURL: "https://user:" + canary + "@proxy.example.com"}, "user info"},
		{stripe.Options{Key: key, BaseURL: "http://proxy.example.com/" + canary}, "clear text"},
		{stripe.Options{Key: key, BaseURL: "ftp://" + canary}, "not an absolute https URL"},
		{stripe.Options{Key: key, BaseURL: "https://api.stripe.com/?k=" + canary}, "query or fragment"},
	} {
		_, err := stripe.NewFetcher(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "FetcherLeakCanary") {
			t.Errorf("%+v: %v, want %q without the value", c.o, err, c.want)
		}
	}
}
