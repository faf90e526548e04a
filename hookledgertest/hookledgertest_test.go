package hookledgertest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
)

var ev = hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_1", Type: "invoice.paid", Body: []byte(`{}`)}

func twoSteps(sent *int, check bool) hookledger.Handler {
	return hookledger.HandlerFunc(func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "charge", func(context.Context, string) (string, error) { return "ch_1", nil }); err != nil {
			return err
		}
		opts := []hookledger.StepOption{hookledger.AtMostOnce()}
		if check {
			opts = append(opts, hookledger.Check(func(context.Context, string) (string, error) {
				if *sent > 0 {
					return "sent", nil
				}
				return "", hookledger.ErrNotDone
			}))
		}
		_, err := ev.Step(ctx, "sms", func(context.Context, string) (string, error) { *sent++; return "sent", nil }, opts...)
		return err
	})
}

func TestCrashAfterEveryStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		crash      hookledgertest.Option
		wantCharge int
	}{
		{hookledgertest.CrashAfter("charge"), 2}, // at-least-once: ran, not recorded, ran again
		{hookledgertest.CrashAfterStart("sms"), 1},
		{hookledgertest.CrashAfter("sms"), 1},
	} {
		sent := 0
		tr := hookledgertest.New(twoSteps(&sent, true))
		if res := tr.Run(t.Context(), ev, tc.crash); res.Status != hookledgertest.Crashed {
			t.Fatalf("first run: %v", res)
		}
		res := tr.Run(t.Context(), ev)
		if res.Status != hookledgertest.Done || res.Attempt != 2 || res.Steps["sms"] != "done: sent" {
			t.Fatalf("retry: %v", res)
		}
		if tr.Runs("charge") != tc.wantCharge || sent != 1 {
			t.Errorf("charge ran %d (want %d), sms sent %d (want 1)", tr.Runs("charge"), tc.wantCharge, sent)
		}
		// Done stays done: a redelivery runs nothing.
		if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Done || len(res.Ran) != 0 {
			t.Fatalf("redelivery: %v", res)
		}
	}
}

func TestIndeterminateThenReplay(t *testing.T) {
	t.Parallel()
	sent := 0
	tr := hookledgertest.New(twoSteps(&sent, false))
	tr.Run(t.Context(), ev, hookledgertest.CrashAfter("sms"))
	res := tr.Run(t.Context(), ev)
	if res.Status != hookledgertest.Dead || !strings.HasPrefix(res.Cause, "indeterminate step sms") || sent != 1 {
		t.Fatalf("retry without a check: %v (sent %d)", res, sent)
	}
	if err := tr.Replay(ev, hookledgertest.MarkDone("sms", "confirmed by support")); err != nil {
		t.Fatal(err)
	}
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Done || sent != 1 {
		t.Fatalf("after replay: %v (sent %d)", res, sent)
	}
	if err := tr.Replay(ev); err == nil {
		t.Fatal("a done event was replayed")
	}
}

func TestRetriesUntilDead(t *testing.T) {
	t.Parallel()
	tr := hookledgertest.New(hookledger.HandlerFunc(func(context.Context, *hookledger.Event) error { return errors.New("503") }))
	tr.MaxAttempts = 3
	for i, want := range []hookledgertest.Status{hookledgertest.Failed, hookledgertest.Failed, hookledgertest.Dead} {
		if res := tr.Run(t.Context(), ev); res.Status != want {
			t.Fatalf("attempt %d: %v, want %s", i+1, res, want)
		}
	}
	perm := hookledgertest.New(hookledger.HandlerFunc(func(context.Context, *hookledger.Event) error {
		return hookledger.Permanent(errors.New("declined"))
	}))
	if res := perm.Run(t.Context(), ev); res.Status != hookledgertest.Dead || res.Cause != "permanent: declined" {
		t.Fatal(res)
	}
	panicky := hookledgertest.New(hookledger.HandlerFunc(func(context.Context, *hookledger.Event) error { panic("nil map") }))
	if res := panicky.Run(t.Context(), ev); res.Status != hookledgertest.Failed || !strings.Contains(res.Cause, "handler panic") {
		t.Fatal(res)
	}
}

func TestLoseLease(t *testing.T) {
	t.Parallel()
	sent := 0
	tr := hookledgertest.New(twoSteps(&sent, true))
	res := tr.Run(t.Context(), ev, hookledgertest.LoseLease())
	if res.Status != hookledgertest.LeaseLost || !errors.Is(res.Err, hookledger.ErrLeaseLost) || sent != 0 {
		t.Fatalf("%v (sent %d): the run must stop at its first write", res, sent)
	}
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Done || sent != 1 {
		t.Fatalf("the taking-over run: %v (sent %d)", res, sent)
	}
}

// TestExtendLeaseAsInThePipeline: the tester refuses what the processor
// refuses (a lease extension that is not positive), and a lost lease found
// by ExtendLease stops the run even if the handler ignores the error.
func TestExtendLeaseAsInThePipeline(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, -time.Second} {
		tr := hookledgertest.New(hookledger.HandlerFunc(func(ctx context.Context, ev *hookledger.Event) error {
			return ev.ExtendLease(ctx, d)
		}))
		if res := tr.Run(t.Context(), ev); res.Err == nil || res.Status == hookledgertest.Done {
			t.Errorf("ExtendLease(%v): %v, want refused", d, res)
		}
	}
	ran := 0
	tr := hookledgertest.New(hookledger.HandlerFunc(func(ctx context.Context, ev *hookledger.Event) error {
		_ = ev.ExtendLease(ctx, time.Minute) // ignored: a mistake, but nothing more may run
		_, err := ev.Step(ctx, "charge", func(context.Context, string) (string, error) { ran++; return "ch_1", nil })
		return err
	}))
	res := tr.Run(t.Context(), ev, hookledgertest.LoseLease())
	if res.Status != hookledgertest.LeaseLost || ran != 0 || !errors.Is(res.Err, hookledger.ErrLeaseLost) {
		t.Fatalf("%v (charge ran %d): a step ran after ExtendLease found the lease lost", res, ran)
	}
}

// TestCheckFailingPermanentlyIsIndeterminate: a check that returns a
// Permanent error has not learnt that the effect did not happen: the event
// is retried and, at the check's MaxAttempts-th failure, dead as
// indeterminate. The crash before it is not a failure.
func TestCheckFailingPermanentlyIsIndeterminate(t *testing.T) {
	t.Parallel()
	sent := 0
	tr := hookledgertest.New(hookledger.HandlerFunc(func(ctx context.Context, ev *hookledger.Event) error {
		_, err := ev.Step(ctx, "sms", func(context.Context, string) (string, error) { sent++; return "sent", nil },
			hookledger.AtMostOnce(), hookledger.Check(func(context.Context, string) (string, error) {
				return "", hookledger.Permanent(errors.New("GET /v1/messages refused with 401"))
			}))
		return err
	}))
	tr.MaxAttempts = 3
	tr.Run(t.Context(), ev, hookledgertest.CrashAfter("sms"))
	for attempt := 2; attempt <= 3; attempt++ {
		if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Failed {
			t.Fatalf("attempt %d: %v, want failed (retried)", attempt, res)
		}
	}
	res := tr.Run(t.Context(), ev)
	if res.Status != hookledgertest.Dead || !strings.HasPrefix(res.Cause, "indeterminate step sms") || !strings.Contains(res.Cause, "failed 3 times") || sent != 1 {
		t.Fatalf("attempt 4: %v (sent %d), want dead as indeterminate", res, sent)
	}
}

// TestInterruptedRunsDoNotSpendAttempts: crashes and lost leases are not
// the handler's failures. An event whose first seven runs are interrupted
// is still retried after its first failure, and dead only at its
// MaxAttempts-th; Attempt counts every run.
func TestInterruptedRunsDoNotSpendAttempts(t *testing.T) {
	t.Parallel()
	fail := false
	tr := hookledgertest.New(hookledger.HandlerFunc(func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "charge", func(context.Context, string) (string, error) { return "ch_1", nil }); err != nil {
			return err
		}
		if fail {
			return errors.New("notify: 503")
		}
		return nil
	}))
	tr.MaxAttempts = 3
	for i := 1; i <= 6; i++ {
		if res := tr.Run(t.Context(), ev, hookledgertest.CrashAfter("charge")); res.Status != hookledgertest.Crashed || res.Attempt != i {
			t.Fatalf("run %d: %v", i, res)
		}
	}
	if res := tr.Run(t.Context(), ev, hookledgertest.LoseLease()); res.Status != hookledgertest.LeaseLost || res.Interrupted != 7 || res.Failures != 0 {
		t.Fatalf("run 7: %v", res)
	}
	fail = true
	for i, want := range []hookledgertest.Status{hookledgertest.Failed, hookledgertest.Failed, hookledgertest.Dead} {
		res := tr.Run(t.Context(), ev)
		if res.Status != want || res.Attempt != 8+i || res.Failures != i+1 || res.Interrupted != 7 {
			t.Fatalf("failure %d: %v, want %s", i+1, res, want)
		}
		if want == hookledgertest.Dead && !strings.Contains(res.Cause, "failed 3 times") {
			t.Fatalf("cause %q", res.Cause)
		}
	}
	if err := tr.Replay(ev); err != nil {
		t.Fatal(err)
	}
	fail = false
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Done || res.Attempt != 1 || res.Failures != 0 || res.Interrupted != 0 {
		t.Fatalf("after replay: %v", res)
	}
}

// TestResultNotUTF8FailsAsInThePipeline: DynamoDB would keep U+FFFD in
// place of the bad bytes; the tester must not pass what the pipeline
// changes.
func TestResultNotUTF8FailsAsInThePipeline(t *testing.T) {
	t.Parallel()
	tr := hookledgertest.New(hookledger.HandlerFunc(func(ctx context.Context, ev *hookledger.Event) error {
		_, err := ev.Step(ctx, "a", func(context.Context, string) (string, error) { return "café"[:4], nil })
		return err
	}))
	if res := tr.Run(t.Context(), ev); res.Status != hookledgertest.Dead || !strings.Contains(res.Cause, "UTF-8") {
		t.Fatal(res)
	}
}

func TestNewRefusesNil(t *testing.T) {
	t.Parallel()
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "Lookup") {
			t.Fatalf("New(nil): %v, want a panic that points at an unmatched route", p)
		}
	}()
	hookledgertest.New(hookledger.NewRouter().Lookup("stripe", "invoice.paid"))
}

// TestEveryCrash runs a two-step handler (an at-least-once charge without a
// check, an at-most-once SMS with one) through every crash point in one call.
func TestEveryCrash(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	charges, sms := map[string]int{}, map[string]int{}
	h := hookledger.HandlerFunc(func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "charge", func(_ context.Context, key string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			charges[key]++
			return "ch_1", nil
		}); err != nil {
			return err
		}
		_, err := ev.Step(ctx, "sms", func(_ context.Context, key string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			sms[key]++
			return "sent", nil
		}, hookledger.AtMostOnce(), hookledger.Check(func(_ context.Context, key string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			if sms[key] > 0 {
				return "sent", nil
			}
			return "", hookledger.ErrNotDone
		}))
		return err
	})
	got := map[string]hookledgertest.Scenario{}
	var order []string
	for _, sc := range hookledgertest.New(h).EveryCrash(t.Context(), ev) {
		got[sc.Point] = sc
		order = append(order, sc.Point)
		if sc.Status != hookledgertest.Done {
			t.Errorf("%v: want done", sc)
		}
		if n := sms[sc.Event.IdempotencyKey("sms")]; n != 1 {
			t.Errorf("%v: %d SMS sent, want 1", sc, n)
		}
	}
	if want := []string{"", "step.charge.ran", "step.sms.started", "step.sms.ran"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("scenarios %q, want %q", order, want)
	}
	// The charge has no check: a crash right after it, before it was
	// recorded, runs it again under the same key (the API must dedupe).
	if sc := got["step.charge.ran"]; sc.Ran["charge"] != 2 || charges[sc.Event.IdempotencyKey("charge")] != 2 || sc.Runs != 2 {
		t.Errorf("crash after the charge: %v, %d charge requests; want the charge run twice over 2 runs", sc, charges[sc.Event.IdempotencyKey("charge")])
	}
	// The SMS step's check finds the message the crashed run sent.
	if sc := got["step.sms.ran"]; sc.Ran["sms"] != 1 || sc.Ran["charge"] != 1 {
		t.Errorf("crash after the SMS: %v; want each step run once", sc)
	}
	if sc := got[""]; sc.Runs != 1 || sc.Ran["charge"] != 1 || sc.Ran["sms"] != 1 {
		t.Errorf("no crash: %v", sc)
	}
}

// TestEveryCrashFindsUnprovableSteps: an at-most-once step without a check
// cannot be proven after a crash between its start and its record; the
// scenario says so (dead, indeterminate) instead of sending twice.
func TestEveryCrashFindsUnprovableSteps(t *testing.T) {
	t.Parallel()
	sent := map[string]int{}
	var mu sync.Mutex
	h := hookledger.HandlerFunc(func(ctx context.Context, ev *hookledger.Event) error {
		_, err := ev.Step(ctx, "email", func(_ context.Context, key string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			sent[key]++
			return "", nil
		}, hookledger.AtMostOnce())
		return err
	})
	for _, sc := range hookledgertest.New(h).EveryCrash(t.Context(), ev) {
		want := hookledgertest.Done
		if sc.Point != "" {
			want = hookledgertest.Dead
		}
		if sc.Status != want || sent[sc.Event.IdempotencyKey("email")] > 1 {
			t.Errorf("%v: want %s and at most one e-mail", sc, want)
		}
		if sc.Point != "" && !strings.HasPrefix(sc.Cause, "indeterminate step email") {
			t.Errorf("%v: want the indeterminate cause", sc)
		}
	}
}
