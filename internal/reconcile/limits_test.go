package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/providerapi"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/webhook"
)

var awsTestConfig = aws.Config{Region: "us-east-1"}

// fakeTime is an injected clock whose sleeps advance it at once, so rate
// limits of minutes are tested in milliseconds.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeTime() *fakeTime { return &fakeTime{now: time.Now()} }

func (f *fakeTime) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	f.mu.Unlock()
	return ctx.Err()
}

func (f *fakeTime) slept() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// on wires the fake clock into an API client, with no jitter.
func (f *fakeTime) on(c *providerapi.Client) {
	c.Now, c.Sleep = f.Now, f.Sleep
	c.Jitter = func(time.Duration) time.Duration { return 0 }
}

// scripted answers each request with the next of its handlers, then 200 [].
type scripted struct {
	mu       sync.Mutex
	answers  []func(http.ResponseWriter)
	requests int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	var a func(http.ResponseWriter)
	if len(s.answers) > 0 {
		a, s.answers = s.answers[0], s.answers[1:]
	}
	s.mu.Unlock()
	if a == nil {
		w.Write([]byte(`[]`))
		return
	}
	a(w)
}

func (s *scripted) count() int { s.mu.Lock(); defer s.mu.Unlock(); return s.requests }

func answer(status int, body string, hdr ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
}

func githubClient(t *testing.T, h http.Handler) (*GitHub, *fakeTime) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p, err := NewGitHub(GitHubOptions{Token: "ghp_x", Hook: "repos/a/b/hooks/1", BaseURL: srv.URL, Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ft := newFakeTime()
	ft.on(p.api)
	return p, ft
}

// TestGitHubRateLimits follows GitHub's documented rules: x-ratelimit-reset
// is waited for, a Retry-After in full, a limit named by neither at least a
// minute; a wait past the run's deadline stops the call instead of retrying
// early, and a rate-limit 403 is reported as a rate limit.
func TestGitHubRateLimits(t *testing.T) {
	t.Parallel()
	const primary = `{"message":"API rate limit exceeded for user ID 1."}`
	const secondary = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`
	inDeadline := func(d time.Duration) context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		t.Cleanup(cancel)
		return ctx
	}
	t.Run("reset past the deadline stops at once", func(t *testing.T) {
		reset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
		s := &scripted{answers: []func(http.ResponseWriter){answer(403, primary, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset),
			answer(403, primary, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset)}}
		p, ft := githubClient(t, s)
		err := p.List(inDeadline(5*time.Minute), time.Now().Add(-time.Hour), func(Event) error { return nil })
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.RateLimited || !apiErr.PastDeadline || s.count() != 1 || len(ft.slept()) != 0 {
			t.Fatalf("err %v after %d requests, slept %v", err, s.count(), ft.slept())
		}
		if strings.Contains(err.Error(), "lacks a permission") || !strings.Contains(err.Error(), "rate limited until") {
			t.Fatalf("a rate-limit 403 reported as: %v", err)
		}
	})
	t.Run("reset within the deadline is waited for", func(t *testing.T) {
		reset := time.Now().Add(30 * time.Second)
		s := &scripted{answers: []func(http.ResponseWriter){answer(403, primary, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))}}
		p, ft := githubClient(t, s)
		start := ft.Now()
		if err := p.List(inDeadline(5*time.Minute), time.Now().Add(-time.Hour), func(Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if s.count() != 2 || ft.Now().Before(reset) || ft.Now().Sub(start) > time.Minute {
			t.Fatalf("%d requests; waited %v (slept %v), want until the reset", s.count(), ft.Now().Sub(start), ft.slept())
		}
	})
	t.Run("a spent quota on a 200 holds the next request", func(t *testing.T) {
		reset := time.Now().Add(40 * time.Second)
		s := &scripted{answers: []func(http.ResponseWriter){answer(200, `[]`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))}}
		p, ft := githubClient(t, s)
		var out []any
		p.api.Get(t.Context(), "/x", &out)
		p.api.Get(t.Context(), "/x", &out)
		if s.count() != 2 || ft.Now().Before(reset) {
			t.Fatalf("%d requests, clock %v before the reset %v", s.count(), ft.Now(), reset)
		}
	})
	for _, status := range []int{403, 429} {
		t.Run(fmt.Sprintf("secondary %d without headers waits a minute", status), func(t *testing.T) {
			s := &scripted{answers: []func(http.ResponseWriter){answer(status, secondary, "X-RateLimit-Remaining", "4000"), answer(status, secondary)}}
			p, ft := githubClient(t, s)
			if err := p.List(t.Context(), time.Now().Add(-time.Hour), func(Event) error { return nil }); err != nil {
				t.Fatal(err)
			}
			sl := ft.slept()
			if s.count() != 3 || len(sl) != 2 || sl[0] < time.Minute || sl[1] < 2*time.Minute {
				t.Fatalf("%d requests, slept %v; want at least 1m, then longer", s.count(), sl)
			}
		})
	}
	t.Run("retry-after in full", func(t *testing.T) {
		s := &scripted{answers: []func(http.ResponseWriter){answer(429, secondary, "Retry-After", "120")}}
		p, ft := githubClient(t, s)
		if err := p.List(t.Context(), time.Now().Add(-time.Hour), func(Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if sl := ft.slept(); len(sl) != 1 || sl[0] != 120*time.Second {
			t.Fatalf("slept %v, want 2m", sl)
		}
		s = &scripted{answers: []func(http.ResponseWriter){answer(403, secondary, "Retry-After", "120")}}
		p, ft = githubClient(t, s)
		err := p.List(inDeadline(time.Minute), time.Now().Add(-time.Hour), func(Event) error { return nil })
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.PastDeadline || s.count() != 1 || len(ft.slept()) != 0 {
			t.Fatalf("Retry-After past the deadline: %v after %d requests, slept %v", err, s.count(), ft.slept())
		}
	})
	t.Run("a permission 403 is not retried", func(t *testing.T) {
		s := &scripted{answers: []func(http.ResponseWriter){answer(403, `{"message":"Resource not accessible by personal access token"}`, "X-RateLimit-Remaining", "4000")}}
		p, _ := githubClient(t, s)
		err := p.List(t.Context(), time.Now().Add(-time.Hour), func(Event) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "lacks a permission") || s.count() != 1 {
			t.Fatalf("%v after %d requests", err, s.count())
		}
	})
}

// TestStripeRateLimits: a 429 honours Retry-After in full, else backs off
// exponentially.
func TestStripeRateLimits(t *testing.T) {
	t.Parallel()
	list := answer(200, `{"object":"list","data":[],"has_more":false}`)
	limited := `{"error":{"message":"Too many requests hit the API too quickly."}}`
	s := &scripted{answers: []func(http.ResponseWriter){answer(429, limited, "Retry-After", "90"), answer(429, limited), answer(429, limited), list}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	p, _ := NewStripe(StripeOptions{APIKey: "sk_test_x", BaseURL: srv.URL, Client: srv.Client()})
	ft := newFakeTime()
	ft.on(p.api)
	if err := p.List(t.Context(), time.Now().Add(-time.Hour), func(Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if sl := ft.slept(); s.count() != 4 || len(sl) != 3 || sl[0] != 90*time.Second || sl[1] < time.Second || sl[2] < 2*sl[1] {
		t.Fatalf("%d requests, slept %v", s.count(), sl)
	}
}

// TestRedeliveriesAreSerialAndSpaced: GitHub asks for mutating requests
// one at a time, at least a second apart.
func TestRedeliveriesAreSerialAndSpaced(t *testing.T) {
	t.Parallel()
	var items []string
	for i := range 12 {
		items = append(items, fmt.Sprintf(`{"id":%d,"guid":"g-%d","delivered_at":%q,"redelivery":false,"status_code":502,"event":"push"}`,
			1000-i, i, time.Now().Add(-time.Duration(i+20)*time.Minute).UTC().Format(time.RFC3339)))
	}
	var (
		inflight, most atomic.Int32
		mu             sync.Mutex
		posts          []time.Time
		ft             *fakeTime
	)
	p, ft := githubClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Write([]byte("[" + strings.Join(items, ",") + "]"))
			return
		}
		n := inflight.Add(1)
		defer inflight.Add(-1)
		if n > most.Load() {
			most.Store(n)
		}
		mu.Lock()
		posts = append(posts, ft.Now())
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		w.WriteHeader(http.StatusAccepted)
	}))
	v, _ := webhook.New(webhook.Config{Provider: "github"})
	r := &Reconciler{Ledger: &memLedger{}, Log: quiet(), Now: ft.Now}
	rep, err := r.Run(t.Context(), Job{Source: "github", Tenant: "acme", Provider: p, Verifier: v, Window: 24 * time.Hour, MinAge: time.Minute, Retention: 168 * time.Hour, Redeliver: true})
	if err != nil || rep.Requested != 12 {
		t.Fatalf("%+v %v", rep.Counts, err)
	}
	if most.Load() != 1 {
		t.Fatalf("%d redelivery POSTs at once, want 1", most.Load())
	}
	for i := 1; i < len(posts); i++ {
		if gap := posts[i].Sub(posts[i-1]); gap < time.Second {
			t.Fatalf("POST %d came %v after the previous one, want at least 1s", i, gap)
		}
	}
}

// ghPages serves a hook's deliveries as pages of items (newest first);
// a nil page answers 502.
func ghPages(t *testing.T, pages [][]string) *GitHub {
	t.Helper()
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Query().Get("cursor"), "p"))
		if pages[n] == nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		if n+1 < len(pages) {
			w.Header().Set("Link", fmt.Sprintf(`<%s/repos/a/b/hooks/1/deliveries?per_page=100&cursor=p%d>; rel="next"`, base, n+1))
		}
		w.Write([]byte("[" + strings.Join(pages[n], ",") + "]"))
	}))
	t.Cleanup(srv.Close)
	base = srv.URL
	p, _ := NewGitHub(GitHubOptions{Token: "ghp_x", Hook: "repos/a/b/hooks/1", BaseURL: srv.URL, Client: srv.Client()})
	ft := newFakeTime()
	ft.on(p.api)
	return p
}

func ghItemJSON(id int, guid string, at time.Time, redelivery bool, status int) string {
	return fmt.Sprintf(`{"id":%d,"guid":%q,"delivered_at":%q,"redelivery":%t,"status_code":%d,"event":"push"}`,
		id, guid, at.UTC().Format(time.RFC3339), redelivery, status)
}

// TestGitHubFeedsAsItLists: each GUID is handed over once its original is
// listed, so a page that fails later loses nothing already listed; a
// redelivery on an earlier page than its original still makes one event,
// judged by the original.
func TestGitHubFeedsAsItLists(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ago := func(m int) time.Time { return now.Add(-time.Duration(m) * time.Minute) }
	var page1 []string
	for i := range 100 {
		page1 = append(page1, ghItemJSON(5000-i, fmt.Sprintf("g-%d", i), ago(20+i), false, 502))
	}
	p := ghPages(t, [][]string{page1, nil})
	v, _ := webhook.New(webhook.Config{Provider: "github"})
	r := &Reconciler{Ledger: &memLedger{}, Log: quiet()}
	rep, err := r.Run(t.Context(), Job{Source: "github", Tenant: "acme", Provider: p, Verifier: v, Window: 72 * time.Hour, MinAge: time.Minute, Retention: 168 * time.Hour, DryRun: true})
	if err == nil || rep.Missing != 100 {
		t.Fatalf("a failing second page: %+v, err %v; want the first page's 100 judged and the error", rep.Counts, err)
	}

	// g-r: redelivered (ok) on page 1, original (failed) on page 2.
	// g-old: redelivered on page 1, original before the window.
	pages := [][]string{
		{ghItemJSON(900, "g-r", ago(30), true, 200), ghItemJSON(899, "g-old", ago(40), true, 502), ghItemJSON(898, "g-a", ago(50), false, 502)},
		{ghItemJSON(800, "g-b", ago(60), false, 502), ghItemJSON(799, "g-r", ago(70), false, 502), ghItemJSON(798, "g-old", ago(48*60), false, 502)},
	}
	p = ghPages(t, pages)
	var got []Event
	if err := p.List(t.Context(), now.Add(-24*time.Hour), func(ev Event) error { got = append(got, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	by := map[string]Event{}
	for _, ev := range got {
		if _, dup := by[ev.ID]; dup {
			t.Fatalf("%s handed over twice: %+v", ev.ID, got)
		}
		by[ev.ID] = ev
	}
	if len(got) != 4 || by["g-r"].ref != "799" || !by["g-r"].At.Equal(ago(70).Truncate(time.Second)) || by["g-r"].Failed ||
		!by["g-old"].At.IsZero() || !by["g-a"].Failed || by["g-b"].ref != "800" {
		t.Fatalf("events %+v", got)
	}
}

// TestAPIURLMustBeHTTPSUnlessLoopback: the API credential goes with every
// request, so plain http is refused except to a local stub, even to a host
// marked trusted (which host may be named at all is TestConfigCheck's).
func TestAPIURLMustBeHTTPSUnlessLoopback(t *testing.T) {
	t.Parallel()
	srcs, _ := source.Parse([]byte(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_1"]}}},
		"github":{"provider":"github","tenants":{"acme":{"secrets":["literal:gh"]}}}}`))
	c := &Config{Sources: srcs, Retention: 168 * time.Hour}
	for u, ok := range map[string]bool{
		"https://api.stripe.com": true, "https://ghe.example.com/api/v3": true,
		"http://127.0.0.1:8080": true, "http://localhost:9": true, "http://[::1]:9/api": true, "http://127.0.0.2": true,
		"http://collector.attacker.example": false, "http://api.stripe.com": false, "http://127.0.0.1.nip.io": false,
		"http://localhost.attacker.example": false, "http://10.0.0.1": false, "https://user:pw@api.stripe.com": false,
	} {
		for _, sp := range []Spec{{Source: "stripe", Tenant: "acme", Credential: "literal:x", APIURL: u, TrustAPIURL: true},
			{Source: "github", Tenant: "acme", Credential: "literal:x", Hook: "repos/a/b/hooks/1", APIURL: u, TrustAPIURL: true}} {
			if err := c.Check(sp); (err == nil) != ok {
				t.Errorf("%s %s: %v, want ok=%t", sp.Source, u, err, ok)
			}
		}
		if _, err := NewStripe(StripeOptions{APIKey: "sk_live_x", BaseURL: u, TrustBaseURL: true}); (err == nil) != ok {
			t.Errorf("NewStripe %s: %v", u, err)
		}
		if _, err := NewGitHub(GitHubOptions{Token: "t", Hook: "repos/a/b/hooks/1", BaseURL: u, TrustBaseURL: true}); (err == nil) != ok {
			t.Errorf("NewGitHub %s: %v", u, err)
		}
	}
}

// TestScheduleGapRefused: a window minus min_age shorter than the schedule's
// interval leaves events no run judges; the function refuses it at cold
// start and says what to set.
func TestScheduleGapRefused(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"rate(1 hour)": time.Hour, "rate(15 minutes)": 15 * time.Minute, "rate(2 days)": 48 * time.Hour,
		"cron(0 * * * ? *)": 0, "": 0} {
		if got, err := ParseSchedule(v); err != nil || got != want {
			t.Errorf("ParseSchedule(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	if _, err := ParseSchedule("every hour"); err == nil {
		t.Error("a bad schedule accepted")
	}
	srcs, _ := source.Parse([]byte(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_1"]}}}}`))
	c := &Config{Sources: srcs, Retention: 168 * time.Hour, Interval: time.Hour}
	err := c.Check(Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Window: "1h"})
	if err == nil || !strings.Contains(err.Error(), "set window to at least 1h10m0s") {
		t.Fatalf("window 1h, min_age 10m, hourly: %v", err)
	}
	if err := c.Check(Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x", Window: "2h"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(Spec{Source: "stripe", Tenant: "acme", Credential: "literal:x"}); err != nil {
		t.Fatalf("default window: %v", err)
	}

	// The function reads the schedule and refuses at cold start.
	specs := `[{"source":"stripe","tenant":"acme","credential":"literal:sk_x","window":"1h"}]`
	_, err = FromConfig(handlerConfig(t), Settings{Specs: specs, ReceiverFunction: "r", Schedule: "rate(1 hour)"}, awsTestConfig, nil, quiet())
	if err == nil || !strings.Contains(err.Error(), "ReconcileSchedule") {
		t.Fatalf("cold start: %v", err)
	}
	if LoadSettings(func(k string) string { return map[string]string{"HOOKLEDGER_RECONCILE_SCHEDULE": "rate(1 hour)"}[k] }).Schedule != "rate(1 hour)" {
		t.Fatal("HOOKLEDGER_RECONCILE_SCHEDULE not read")
	}
}

// TestRequestedIsNotRecovered: a redelivery asked of GitHub has not
// reached the ledger yet; it is counted as requested, not recovered.
func TestRequestedIsNotRecovered(t *testing.T) {
	t.Parallel()
	if n := (Counts{Fed: 1, Duplicate: 2, Requested: 4}).Recovered(); n != 3 {
		t.Fatalf("recovered %d, want fed + duplicate = 3", n)
	}
}
