package effect_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
	"github.com/hookledger/hookledger/lab/effect"
	"github.com/hookledger/hookledger/lab/providerstub"
)

// A thin meter error report: the meter is fetched from the Stripe
// stand-in on every attempt, the notification sent once, whatever crash
// comes between.
func TestMeterErrorsFetchAndNotifyOnce(t *testing.T) {
	t.Parallel()
	a := &apis{charges: map[string]string{}, accounts: map[string]string{}, notes: map[string]int{}}
	fake := httptest.NewServer(a)
	t.Cleanup(fake.Close)
	stub := providerstub.New(providerstub.Options{StripeKey: "sk_test_stub"})
	api := httptest.NewServer(stub)
	t.Cleanup(api.Close)
	r := hookledger.NewRouter()
	if err := effect.Register(r, hookledger.SettingsMap(map[string]string{"PAYMENTS_URL": fake.URL, "NOTIFY_URL": fake.URL,
		"STRIPE_API_KEY": "sk_test_stub", "STRIPE_API_URL": api.URL})); err != nil {
		t.Fatal(err)
	}
	meter := providerstub.RelatedObject{ID: "mtr_1", Type: "billing.meter", Path: "/v1/billing/meters/mtr_1"}
	id, n, err := stub.Stripe.ThinEvent(effect.MeterErrorType, "acct_1CONNECTED", meter, json.RawMessage(`{"id":"mtr_1","display_name":"API calls","status":"active"}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := hookledger.Event{Source: "stripe", Tenant: "acme", ID: id, Type: effect.MeterErrorType, Body: n}
	tr := hookledgertest.New(r.Lookup("stripe", effect.MeterErrorType))
	if res := tr.Run(t.Context(), ev, hookledgertest.CrashAfter("notify")); res.Status != hookledgertest.Crashed {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Done {
		t.Fatal(res)
	}
	if got := a.notes[ev.IdempotencyKey("notify")]; got != 1 {
		t.Errorf("notified %d times, want once", got)
	}
	if got := stub.Stripe.Fetches(meter.Path); got != 2 {
		t.Errorf("the meter was fetched %d times, want once per attempt (2)", got)
	}
	// Without STRIPE_API_KEY the route is not there (the demo and chaos
	// runs set none).
	r2 := hookledger.NewRouter()
	if err := effect.Register(r2, hookledger.SettingsMap(map[string]string{"PAYMENTS_URL": fake.URL, "NOTIFY_URL": fake.URL})); err != nil {
		t.Fatal(err)
	}
	if r2.Lookup("stripe", effect.MeterErrorType) != nil {
		t.Error("a thin route without a key")
	}
}
