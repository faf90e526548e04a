package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/lab/providerstub"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// The reconciler's own logic against the provider stand-ins, with an
// in-memory ledger and receiver.

// memLedger is an in-memory stand-in for the ledger's Exists.
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

// recorder is a receiver stand-in: it verifies like the real one and
// answers with a scripted status.
type recorder struct {
	mu       sync.Mutex
	verifier *webhook.Verifier
	secret   string
	answers  []int // statuses to answer, in order; then 200
	keys     []string
	bodies   [][]byte
	url      string
}

func (r *recorder) URL(source, tenant string) string {
	return r.url + "/webhooks/" + source + "/" + tenant
}

func (r *recorder) Feed(_ context.Context, source, tenant string, hdr http.Header, body []byte) (reconcile.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.answers) > 0 {
		s := r.answers[0]
		r.answers = r.answers[1:]
		if s != 200 {
			return reconcile.Outcome{Status: s, Result: "unavailable"}, nil
		}
	}
	ev, err := r.verifier.Verify(&webhook.Request{Method: "POST", URL: r.URL(source, tenant), Header: hdr, Body: body}, []string{r.secret}, time.Now())
	if err != nil {
		return reconcile.Outcome{Status: 401, Result: "rejected_signature"}, nil
	}
	r.keys = append(r.keys, ev.ID)
	r.bodies = append(r.bodies, body)
	return reconcile.Outcome{Status: 200, Result: "accepted"}, nil
}

// scriptedFeeder answers feeds with the given outcomes, in order, then
// accepted.
type scriptedFeeder struct {
	mu    sync.Mutex
	out   []reconcile.Outcome
	feeds int
}

func (f *scriptedFeeder) URL(source, tenant string) string {
	return "https://h/webhooks/" + source + "/" + tenant
}

func (f *scriptedFeeder) Feed(context.Context, string, string, http.Header, []byte) (reconcile.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.feeds++
	if len(f.out) > 0 {
		o := f.out[0]
		f.out = f.out[1:]
		return o, nil
	}
	return reconcile.Outcome{Status: 202, Result: "accepted"}, nil
}

// fakeTime is an injected clock whose sleeps advance it at once.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return ctx.Err()
}

func (f *fakeTime) slept() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// githubAPI calls the GitHub stand-in's deliveries API with its token and
// decodes the answer into out (when not nil).
func githubAPI(t *testing.T, method, url string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer ghp_stub")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %s", method, url, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// stubFixture is a provider stub whose endpoint nobody serves, so every
// event emitted while down counts as failed.
func stubFixture(t *testing.T, now func() time.Time) (*providerstub.Server, string) {
	t.Helper()
	stub := providerstub.New(providerstub.Options{Now: now})
	api := httptest.NewServer(stub)
	t.Cleanup(api.Close)
	hooks := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(hooks.Close)
	stub.Stripe.SetEndpoint(hooks.URL, "whsec_unit")
	stub.GitHub.SetEndpoint(hooks.URL, "gh_unit")
	return stub, api.URL
}

func TestKeyFromDeliveryUsesTheSourcesKeying(t *testing.T) {
	t.Parallel()
	stub, api := stubFixture(t, nil)
	ctx := t.Context()
	stub.Stripe.SetDown(true)
	for i := range 3 {
		stub.Stripe.Emit(ctx, "invoice.paid", json.RawMessage(fmt.Sprintf(`{"id":"in_%d","object":"invoice"}`, i)))
	}
	// The source keys Stripe events by the invoice id, not the event id.
	v, err := webhook.New(webhook.Config{Provider: "stripe", KeyPath: "data.object.id"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := reconcile.NewStripe(reconcile.StripeOptions{APIKey: "sk_test_stub", BaseURL: api})
	rec := &recorder{verifier: v, secret: "whsec_unit", url: "https://hooks.example.com"}
	mem := &memLedger{keys: map[string]bool{"in_1": true}}
	r := &reconcile.Reconciler{Ledger: mem, Feeder: rec, Log: quiet()}
	rep, err := r.Run(ctx, reconcile.Job{Source: "stripe", Tenant: "acme", Provider: p, Verifier: v, Secrets: []string{"whsec_unit"},
		KeyFromDelivery: true, Window: time.Hour, Retention: 168 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seen != 3 || rep.InLedger != 1 || rep.Fed != 2 || strings.Join(rec.keys, ",") != "in_2,in_0" && strings.Join(rec.keys, ",") != "in_0,in_2" {
		t.Fatalf("%+v fed %v", rep.Counts, rec.keys)
	}
	for _, f := range rep.Found {
		if !strings.HasPrefix(f.Key, "in_") {
			t.Fatalf("found key %q, want the source's key", f.Key)
		}
	}
}

func TestFeedRetriesUnavailableThenCountsFailures(t *testing.T) {
	t.Parallel()
	stub, api := stubFixture(t, nil)
	ctx := t.Context()
	stub.GitHub.SetDown(true)
	stub.GitHub.Emit(ctx, "push", json.RawMessage(`{"ref":"a"}`))
	stub.GitHub.Emit(ctx, "push", json.RawMessage(`{"ref":"b"}`))
	v, _ := webhook.New(webhook.Config{Provider: "github"})
	p, _ := reconcile.NewGitHub(reconcile.GitHubOptions{Token: "ghp_stub", Hook: "repos/acme/shop/hooks/42", BaseURL: api})

	// Two 503s, then accepted: retried (with a fresh signature) and fed.
	rec := &recorder{verifier: v, secret: "gh_unit", url: "https://h", answers: []int{503, 503}}
	r := &reconcile.Reconciler{Ledger: &memLedger{}, Feeder: rec, Log: quiet(), Concurrency: 1, Backoff: time.Millisecond}
	job := reconcile.Job{Source: "github", Tenant: "acme", Provider: p, Verifier: v, Secrets: []string{"gh_unit"}, Window: time.Hour, Retention: 168 * time.Hour}
	rep, err := r.Run(ctx, job)
	if err != nil || rep.Fed != 2 || rep.Failed != 0 {
		t.Fatalf("%+v %v", rep.Counts, err)
	}
	// Rebuilt GitHub bodies are the payload, compact, in the API's key order
	// (newest first: each event is fed as soon as its group is listed).
	if len(rec.bodies) != 2 || string(rec.bodies[0])+string(rec.bodies[1]) != `{"ref":"b"}{"ref":"a"}` {
		t.Fatalf("bodies %s", rec.bodies)
	}
	// Always unavailable: failed after the retries; a 4xx fails at once.
	rec = &recorder{verifier: v, secret: "gh_unit", url: "https://h", answers: []int{503, 503, 503, 503, 400}}
	r = &reconcile.Reconciler{Ledger: &memLedger{}, Feeder: rec, Log: quiet(), Concurrency: 1, Backoff: time.Millisecond}
	rep, err = r.Run(ctx, job)
	if err != nil || rep.Failed != 2 || rep.Fed != 0 || !strings.Contains(rep.Found[0].Result+rep.Found[1].Result, "answered 400") {
		t.Fatalf("%+v %v %+v", rep.Counts, err, rep.Found)
	}
	// A wrong signing secret is caught before anything is sent.
	rec = &recorder{verifier: v, secret: "gh_unit", url: "https://h"}
	r = &reconcile.Reconciler{Ledger: &memLedger{}, Feeder: rec, Log: quiet()}
	bad := job
	bad.Secrets = []string{""}
	rep, _ = r.Run(ctx, bad)
	if rep.Failed != 2 || len(rec.keys) != 0 {
		t.Fatalf("%+v", rep.Counts)
	}
}

func TestLedgerErrorStopsTheRun(t *testing.T) {
	t.Parallel()
	stub, api := stubFixture(t, nil)
	stub.Stripe.SetDown(true)
	for range 30 {
		stub.Stripe.Emit(t.Context(), "invoice.paid", json.RawMessage(`{}`))
	}
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	p, _ := reconcile.NewStripe(reconcile.StripeOptions{APIKey: "sk_test_stub", BaseURL: api})
	rec := &recorder{verifier: v, secret: "whsec_unit"}
	r := &reconcile.Reconciler{Ledger: &memLedger{err: ledger.ErrUnavailable}, Feeder: rec, Log: quiet()}
	_, err := r.Run(t.Context(), reconcile.Job{Source: "stripe", Tenant: "acme", Provider: p, Verifier: v, Secrets: []string{"whsec_unit"}, Window: time.Hour})
	if !errors.Is(err, ledger.ErrUnavailable) || len(rec.keys) != 0 {
		t.Fatalf("err %v, fed %d", err, len(rec.keys))
	}
}

func TestWindowsAndAges(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	stub, api := stubFixture(t, clock)
	ctx := t.Context()
	stub.GitHub.SetDown(true)
	old, _, _ := stub.GitHub.Emit(ctx, "push", json.RawMessage(`{"n":1}`))
	advance(30 * time.Hour)
	stub.GitHub.Emit(ctx, "push", json.RawMessage(`{"n":2}`))
	advance(2 * time.Hour)
	fresh, _, _ := stub.GitHub.Emit(ctx, "push", json.RawMessage(`{"n":3}`))
	// Redeliver the old one now, through the stub's API: its original is
	// outside a 24 h window.
	var items []struct {
		ID   int64
		GUID string
	}
	deliveries := api + "/repos/acme/shop/hooks/42/deliveries"
	githubAPI(t, http.MethodGet, deliveries, &items)
	for _, it := range items {
		if it.GUID == old {
			githubAPI(t, http.MethodPost, fmt.Sprintf("%s/%d/attempts", deliveries, it.ID), nil)
		}
	}
	p, _ := reconcile.NewGitHub(reconcile.GitHubOptions{Token: "ghp_stub", Hook: "repos/acme/shop/hooks/42", BaseURL: api})
	v, _ := webhook.New(webhook.Config{Provider: "github"})
	r := &reconcile.Reconciler{Ledger: &memLedger{}, Log: quiet(), Now: clock}
	rep, err := r.Run(ctx, reconcile.Job{Source: "github", Tenant: "acme", Provider: p, Verifier: v, Window: 24 * time.Hour,
		MinAge: time.Hour, Retention: 168 * time.Hour, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	// n=1: only its redelivery is in the window, so it is not judged; n=2:
	// missing; n=3: younger than MinAge.
	if rep.Seen != 3 || rep.TooOld != 1 || rep.Missing != 1 || rep.TooRecent != 1 {
		t.Fatalf("%+v", rep.Counts)
	}
	if rep.Found[0].Key == fresh || rep.Found[0].Key == old {
		t.Fatalf("found %+v", rep.Found)
	}

	// A window reaching past the ledger's retention is refused.
	j := reconcile.Job{Source: "s", Tenant: "t", Provider: p, Verifier: v, Secrets: []string{"x"}, Window: 168 * time.Hour, Retention: 168 * time.Hour}
	if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("validate: %v", err)
	}
	j.Window = 167 * time.Hour
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestFeedConflictIsPresentAndThrottleRetried: under HOOKLEDGER_MISMATCH=
// reject the sender's own retry that won the race is answered 409
// rejected_conflict: the event is in the ledger (duplicate). A 429 from the
// receiver or API Gateway is "later", retried after its Retry-After.
func TestFeedConflictIsPresentAndThrottleRetried(t *testing.T) {
	t.Parallel()
	stub, api := stubFixture(t, nil)
	stub.Stripe.SetDown(true)
	stub.Stripe.Emit(t.Context(), "invoice.paid", json.RawMessage(`{"id":"in_1"}`))
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	p, _ := reconcile.NewStripe(reconcile.StripeOptions{APIKey: "sk_test_stub", BaseURL: api})
	job := reconcile.Job{Source: "stripe", Tenant: "acme", Provider: p, Verifier: v, Secrets: []string{"whsec_unit"}, Window: time.Hour, Retention: 168 * time.Hour}

	f := &scriptedFeeder{out: []reconcile.Outcome{{Status: http.StatusConflict, Result: "rejected_conflict"}}}
	r := &reconcile.Reconciler{Ledger: &memLedger{}, Feeder: f, Log: quiet()}
	rep, err := r.Run(t.Context(), job)
	if err != nil || rep.Duplicate != 1 || rep.Failed != 0 || rep.Found[0].Result != "duplicate_rejected_conflict" {
		t.Fatalf("conflict: %+v %v %+v", rep.Counts, err, rep.Found)
	}
	// Another 409 (a body replayed under another id) is still a failure.
	f = &scriptedFeeder{out: []reconcile.Outcome{{Status: http.StatusConflict, Result: "rejected_replay"}}}
	r = &reconcile.Reconciler{Ledger: &memLedger{}, Feeder: f, Log: quiet()}
	if rep, _ = r.Run(t.Context(), job); rep.Failed != 1 {
		t.Fatalf("replay: %+v", rep.Counts)
	}

	ft := &fakeTime{now: time.Now()}
	f = &scriptedFeeder{out: []reconcile.Outcome{{Status: http.StatusTooManyRequests, RetryAfter: 7 * time.Second}, {Status: http.StatusTooManyRequests}}}
	r = &reconcile.Reconciler{Ledger: &memLedger{}, Feeder: f, Log: quiet(), Sleep: ft.Sleep, Backoff: time.Second}
	rep, err = r.Run(t.Context(), job)
	if err != nil || rep.Fed != 1 || rep.Failed != 0 || f.feeds != 3 {
		t.Fatalf("throttled: %+v %v after %d feeds", rep.Counts, err, f.feeds)
	}
	if sl := ft.slept(); len(sl) != 2 || sl[0] != 7*time.Second || sl[1] != 2*time.Second {
		t.Fatalf("slept %v, want the Retry-After then the backoff", sl)
	}
}
