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
	"github.com/hookledger/hookledger/internal/providerstub"
	"github.com/hookledger/hookledger/stripe"
)

const key = "sk_test_stub"

var meter = providerstub.RelatedObject{ID: "mtr_123", Type: "billing.meter", Path: "/v1/billing/meters/mtr_123"}

func setup(t *testing.T) (*providerstub.Server, *httptest.Server) {
	t.Helper()
	stub := providerstub.New(providerstub.Options{StripeKey: key})
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	return stub, srv
}

func event(t *testing.T, tenant, id string, body []byte) *hookledger.Event {
	t.Helper()
	var head struct{ Type string }
	json.Unmarshal(body, &head)
	return &hookledger.Event{Source: "stripe", Tenant: tenant, ID: id, Type: head.Type, Body: body}
}

func TestParse(t *testing.T) {
	t.Parallel()
	stub, _ := setup(t)
	id, n, err := stub.Stripe.ThinEvent("v1.billing.meter.error_report_triggered", "acct_1CONNECTED", meter, []byte(`{"id":"mtr_123"}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := event(t, "acme", id, n)
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

// The fetcher gets the full event and the object as it is now, with a
// platform key and the event's context as Stripe-Context (the stub, as
// Stripe, finds a connected account's data only with it).
func TestFetchEventAndObject(t *testing.T) {
	t.Parallel()
	stub, srv := setup(t)
	f, err := stripe.NewFetcher(stripe.Options{Key: key, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	id, n, _ := stub.Stripe.ThinEvent("v1.billing.meter.error_report_triggered", "acct_1CONNECTED", meter, []byte(`{"id":"mtr_123","status":"active"}`))
	// The object changes after the event: a fetch reads its current state.
	stub.Stripe.ThinEvent("v1.billing.meter.updated", "acct_1CONNECTED", meter, []byte(`{"id":"mtr_123","status":"inactive"}`))
	ev := event(t, "acme", id, n)
	full, err := f.FetchEvent(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ID   string          `json:"id"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(full, &got); got.ID != id || len(got.Data) == 0 {
		t.Errorf("full event %s", full)
	}
	obj, err := f.FetchObject(t.Context(), ev)
	if err != nil || !strings.Contains(string(obj), `"inactive"`) {
		t.Errorf("object %s %v", obj, err)
	}
	if stub.Stripe.Fetches("/v2/core/events/"+id) != 1 || stub.Stripe.Fetches(meter.Path) != 1 {
		t.Error("the stub did not answer both fetches")
	}
}

// Throttling is retried as the reconciler retries it; a refused key, an
// event the key cannot see and a related object outside Stripe's API are
// permanent (no retry can fix them), each saying what to fix.
func TestFetchErrors(t *testing.T) {
	t.Parallel()
	stub, srv := setup(t)
	id, n, _ := stub.Stripe.ThinEvent("v1.billing.meter.no_meter_found", "", meter, []byte(`{"id":"mtr_123"}`))
	ev := event(t, "acme", id, n)

	f, _ := stripe.NewFetcher(stripe.Options{Keys: map[string]string{"acme": key}, BaseURL: srv.URL})
	stub.Stripe.ThrottleNext(1)
	if _, err := f.FetchEvent(t.Context(), ev); err != nil {
		t.Errorf("after one 429: %v", err)
	}
	other := *ev
	other.Tenant = "globex"
	if _, err := f.FetchEvent(t.Context(), &other); !hookledgertest.IsPermanent(err) || !strings.Contains(err.Error(), `no API key for tenant "globex"`) {
		t.Errorf("a tenant without a key: %v", err)
	}

	wrong, _ := stripe.NewFetcher(stripe.Options{Key: "sk_test_wrong", BaseURL: srv.URL})
	if _, err := wrong.FetchObject(t.Context(), ev); !hookledgertest.IsPermanent(err) || !strings.Contains(err.Error(), "check the effect setting") {
		t.Errorf("a refused key: %v", err)
	}
	gone := event(t, "acme", "evt_test_gone", []byte(`{"id":"evt_test_gone","object":"v2.core.event","type":"x.y"}`))
	if _, err := f.FetchEvent(t.Context(), gone); !hookledgertest.IsPermanent(err) || !strings.Contains(err.Error(), "older than 30 days") {
		t.Errorf("an event the API does not have: %v", err)
	}
	if _, err := f.FetchObject(t.Context(), gone); !hookledgertest.IsPermanent(err) || !strings.Contains(err.Error(), "no related object") {
		t.Errorf("an event without a related object: %v", err)
	}
	elsewhere := event(t, "acme", "evt_test_x", []byte(`{"id":"evt_test_x","object":"v2.core.event","type":"x.y","related_object":{"id":"o","type":"t","url":"https://evil.example/v1/x"}}`))
	if _, err := f.FetchObject(t.Context(), elsewhere); !hookledgertest.IsPermanent(err) || !strings.Contains(err.Error(), "not a path of Stripe's API") {
		t.Errorf("a related object elsewhere: %v", err)
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
