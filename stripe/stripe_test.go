package stripe_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	if _, err := stripe.Parse(snapshot); !errors.Is(err, stripe.ErrNotThin) || !hookledger.IsPermanent(err) {
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
	if _, err := f.FetchEvent(t.Context(), &other); !hookledger.IsPermanent(err) || !strings.Contains(err.Error(), `no API key for tenant "globex"`) {
		t.Errorf("a tenant without a key: %v", err)
	}

	wrong, _ := stripe.NewFetcher(stripe.Options{Key: "sk_test_wrong", BaseURL: srv.URL})
	if _, err := wrong.FetchObject(t.Context(), ev); !hookledger.IsPermanent(err) || !strings.Contains(err.Error(), "check the effect setting") {
		t.Errorf("a refused key: %v", err)
	}
	gone := event(t, "acme", "evt_test_gone", []byte(`{"id":"evt_test_gone","object":"v2.core.event","type":"x.y"}`))
	if _, err := f.FetchEvent(t.Context(), gone); !hookledger.IsPermanent(err) || !strings.Contains(err.Error(), "older than 30 days") {
		t.Errorf("an event the API does not have: %v", err)
	}
	if _, err := f.FetchObject(t.Context(), gone); !hookledger.IsPermanent(err) || !strings.Contains(err.Error(), "no related object") {
		t.Errorf("an event without a related object: %v", err)
	}
	elsewhere := event(t, "acme", "evt_test_x", []byte(`{"id":"evt_test_x","object":"v2.core.event","type":"x.y","related_object":{"id":"o","type":"t","url":"https://evil.example/v1/x"}}`))
	if _, err := f.FetchObject(t.Context(), elsewhere); !hookledger.IsPermanent(err) || !strings.Contains(err.Error(), "not a path of Stripe's API") {
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
