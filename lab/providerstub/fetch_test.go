package providerstub_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
	"github.com/hookledger/hookledger/lab/providerstub"
	"github.com/hookledger/hookledger/stripe"
)

// The product's Stripe fetcher (package stripe) against the stand-in.

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
