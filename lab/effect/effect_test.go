package effect_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
	"github.com/hookledger/hookledger/lab/effect"
)

// apis fakes the two downstream APIs the invoice handler calls: payments
// (deduplicates by Idempotency-Key) and notifications (sends on every
// call; searchable by reference). It counts what really happened.
type apis struct {
	mu       sync.Mutex
	charges  map[string]string // idempotency key -> charge id
	accounts map[string]string // idempotency key -> account charged
	notes    map[string]int    // reference -> notifications sent
}

// effects returns how many charges and notifications the event's steps
// made, by their keys.
func (a *apis) effects(ev hookledger.Event) (charges, notifications int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.charges[ev.IdempotencyKey("charge")]; ok {
		charges = 1
	}
	return charges, a.notes[ev.IdempotencyKey("notify")]
}

func (a *apis) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/charges":
		var req effect.ChargeRequest
		json.NewDecoder(r.Body).Decode(&req)
		key := r.Header.Get("Idempotency-Key")
		if _, ok := a.charges[key]; !ok {
			a.charges[key] = "ch_" + key[3:9]
			a.accounts[key] = req.Account
		}
		json.NewEncoder(w).Encode(map[string]string{"id": a.charges[key]})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/charges":
		id, ok := a.charges[r.URL.Query().Get("idempotency_key")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"id": id})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/notifications":
		var n effect.Notification
		json.NewDecoder(r.Body).Decode(&n)
		a.notes[n.Reference]++
		json.NewEncoder(w).Encode(map[string]string{"id": "ntf_1"})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/notifications":
		var out []map[string]string
		for range a.notes[r.URL.Query().Get("reference")] {
			out = append(out, map[string]string{"id": "ntf_1"})
		}
		json.NewEncoder(w).Encode(out)
	default:
		http.Error(w, "no route", http.StatusNotFound)
	}
}

// setup registers the shipped routes against fake APIs, as the processor's
// main does against the real ones.
func setup(t *testing.T) (*hookledgertest.Tester, *apis) {
	t.Helper()
	a := &apis{charges: map[string]string{}, accounts: map[string]string{}, notes: map[string]int{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	r := hookledger.NewRouter()
	if err := effect.Register(r, hookledger.SettingsMap(map[string]string{"PAYMENTS_URL": srv.URL, "NOTIFY_URL": srv.URL})); err != nil {
		t.Fatal(err)
	}
	return hookledgertest.New(r.Lookup("stripe", "invoice.paid")), a
}

var paid = hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_1", Type: "invoice.paid",
	Body: []byte(`{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1","amount_paid":4900,"currency":"eur","customer":"cus_1","customer_email":"ada@example.com"}}}`)}

func TestInvoicePaidChargesAndNotifiesOnce(t *testing.T) {
	t.Parallel()
	tr, a := setup(t)
	if res := tr.Run(t.Context(), paid); res.Status != hookledgertest.Done {
		t.Fatal(res)
	}
	if len(a.charges) != 1 || len(a.notes) != 1 || a.accounts[paid.IdempotencyKey("charge")] != "acme" {
		t.Fatalf("charges %v (accounts %v), notifications %v", a.charges, a.accounts, a.notes)
	}
}

// TestInvoicePaidSurvivesCrashes crashes the handler at every point a
// process can die, each followed by the pipeline's retries: one charge and
// one notification, always, and the charge is not even requested again (its
// check finds it by key).
func TestInvoicePaidSurvivesCrashes(t *testing.T) {
	t.Parallel()
	tr, a := setup(t)
	for _, sc := range tr.EveryCrash(t.Context(), paid) {
		charged, notified := a.effects(sc.Event)
		if sc.Status != hookledgertest.Done || charged != 1 || notified != 1 || sc.Ran["charge"] != 1 {
			t.Errorf("%v: %d charges, %d notifications; want done, one of each, the charge requested once", sc, charged, notified)
		}
	}
}

func TestInvoiceWithoutAmountIsPermanent(t *testing.T) {
	t.Parallel()
	tr, a := setup(t)
	ev := paid
	ev.ID, ev.Body = "evt_2", []byte(`{"data":{"object":{"currency":"eur"}}}`)
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Dead || !strings.Contains(res.Cause, "amount") {
		t.Fatal(res)
	}
	if len(a.charges) != 0 {
		t.Fatal("charged an invoice without an amount")
	}
}

func TestRegisterNamesMissingSettings(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]string{
		"":               "effect setting PAYMENTS_URL is missing (read at effect/effect.go:",
		"payments":       "effect setting NOTIFY_URL is missing (read at effect/effect.go:",
		"payments,bogus": `effect setting NOTIFY_URL has a scheme other than http or https`,
	} {
		vals := map[string]string{}
		if strings.Contains(env, "payments") {
			vals["PAYMENTS_URL"] = "http://127.0.0.1:1"
		}
		if strings.Contains(env, "bogus") {
			vals["NOTIFY_URL"] = "ftp://x"
		}
		err := effect.Register(hookledger.NewRouter(), hookledger.SettingsMap(vals))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("settings %q: %v, want %q", env, err, want)
		}
	}
}

// TestNotifyCheckDoesNotTake404ForNotSent: the notification search
// answering 404 (a gateway without the route, a key without search scope)
// is a failed lookup, not "not sent": the retry must not notify again; the
// event retries and, once its attempts are spent, is indeterminate.
func TestNotifyCheckDoesNotTake404ForNotSent(t *testing.T) {
	t.Parallel()
	a := &apis{charges: map[string]string{}, accounts: map[string]string{}, notes: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/notifications" {
			http.NotFound(w, r)
			return
		}
		a.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	r := hookledger.NewRouter()
	if err := effect.Register(r, hookledger.SettingsMap(map[string]string{"PAYMENTS_URL": srv.URL, "NOTIFY_URL": srv.URL})); err != nil {
		t.Fatal(err)
	}
	tr := hookledgertest.New(r.Lookup("stripe", "invoice.paid"))
	tr.MaxAttempts = 2 // two failed checks: the crash before them is not a failure
	if res := tr.Run(t.Context(), paid, hookledgertest.CrashAfter("notify")); res.Status != hookledgertest.Crashed {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), paid); res.Status != hookledgertest.Failed {
		t.Fatalf("retry: %v, want failed (the check could not answer)", res)
	}
	res := tr.Run(t.Context(), paid)
	if res.Status != hookledgertest.Dead || !strings.HasPrefix(res.Cause, "indeterminate step notify") {
		t.Fatalf("last attempt: %v, want dead as indeterminate", res)
	}
	if n := a.notes[paid.IdempotencyKey("notify")]; n != 1 {
		t.Fatalf("notified %d times, want once", n)
	}
	// The charge's check still reads 404 as "no such charge": a GET of
	// the exact object.
	if _, err := (&effect.Payments{BaseURL: srv.URL, Client: srv.Client()}).Find(t.Context(), "hl_none"); !errors.Is(err, hookledger.ErrNotDone) {
		t.Fatalf("Find of a missing charge: %v, want ErrNotDone", err)
	}
}

// subscription is a customer.subscription.updated event of sub at created.
func subscription(id, sub string, created int64) hookledger.Event {
	body := fmt.Sprintf(`{"id":%q,"type":%q,"created":%d,"data":{"object":{"id":%q,"object":"subscription","status":"active"}}}`,
		id, effect.SubscriptionType, created, sub)
	return hookledger.Event{Source: "stripe", Tenant: "acme", ID: id, Type: effect.SubscriptionType, Body: []byte(body)}
}

// TestSubscriptionsApplyInOrderOnce: an update is announced once through a
// crash after its announcement, and an older update that comes after it
// is skipped, announcing nothing.
func TestSubscriptionsApplyInOrderOnce(t *testing.T) {
	t.Parallel()
	a := &apis{charges: map[string]string{}, accounts: map[string]string{}, notes: map[string]int{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	r := hookledger.NewRouter()
	if err := effect.Register(r, hookledger.SettingsMap(map[string]string{"PAYMENTS_URL": srv.URL, "NOTIFY_URL": srv.URL})); err != nil {
		t.Fatal(err)
	}
	tr := hookledgertest.New(r.Lookup("stripe", effect.SubscriptionType))
	newer, older := subscription("evt_s2", "sub_1", 1700000200), subscription("evt_s1", "sub_1", 1700000100)
	if res := tr.Run(t.Context(), newer, hookledgertest.CrashAfter("apply")); res.Status != hookledgertest.Crashed {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), newer); res.Status != hookledgertest.Done {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), older); res.Status != hookledgertest.Stale {
		t.Fatalf("older after newer: %v, want stale", res)
	}
	if n, m := a.notes[newer.IdempotencyKey("apply")], a.notes[older.IdempotencyKey("apply")]; n != 1 || m != 0 {
		t.Fatalf("announced the newer update %d times and the older %d; want once and never", n, m)
	}
}
