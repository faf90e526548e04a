package ledger_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/ledger"
)

// running creates an event and claims it: a run that may take a resource.
func running(t *testing.T, f fixture, key string) ledger.Lease {
	t.Helper()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
	create(t, f, id)
	lease, err := f.l.ClaimEvent(t.Context(), id, time.Minute, createdAs)
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

func orderErr(t *testing.T, err error, want error) *ledger.OrderError {
	t.Helper()
	var oe *ledger.OrderError
	if !errors.Is(err, want) || !errors.As(err, &oe) {
		t.Fatalf("got %v, want %v", err, want)
	}
	return oe
}

func TestTakeOrderRules(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	res := "sub_" + awstest.Name("r")

	a := running(t, f, awstest.Name("evt_a"))
	took, err := f.l.TakeOrder(ctx, a, res, 200, false)
	if err != nil || took.Before != nil || took.Tie {
		t.Fatalf("first take: %+v, %v", took, err)
	}
	o, err := f.l.GetOrder(ctx, "stripe", "acme", res)
	if err != nil || o.Position != 200 || o.Holder != a.ID.ID || o.HoldToken != a.Token {
		t.Fatalf("item %+v, %v", o, err)
	}

	// An older event is stale at once, holder live or not; nothing written.
	older := running(t, f, awstest.Name("evt_old"))
	oe := orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, older, res, 100, false); return err }(), ledger.ErrStale)
	if oe.Order.Position != 200 || oe.Order.Holder != a.ID.ID {
		t.Fatalf("stale against %+v", oe.Order)
	}

	// A newer one waits while a's run is live, and says who holds it.
	b := running(t, f, awstest.Name("evt_b"))
	oe = orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, b, res, 300, false); return err }(), ledger.ErrBusy)
	if oe.Holder == nil || oe.Holder.Status != ledger.Processing || oe.Order.Holder != a.ID.ID {
		t.Fatalf("busy: %+v", oe)
	}
	// So does one at the same position (a tie waits too).
	tie := running(t, f, awstest.Name("evt_tie"))
	orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, tie, res, 200, false); return err }(), ledger.ErrBusy)

	// a's run answers (done): the newer one takes over, without a second
	// write by a.
	if _, err := f.l.Complete(ctx, a); err != nil {
		t.Fatal(err)
	}
	took, err = f.l.TakeOrder(ctx, b, res, 300, false)
	if err != nil || took.Before == nil || took.Before.Holder != a.ID.ID || took.Before.Position != 200 || took.Tie {
		t.Fatalf("takeover: %+v, %v", took, err)
	}
	if _, err := f.l.Complete(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Equal position, holder over: applied in turn, flagged a tie.
	took, err = f.l.TakeOrder(ctx, tie, res, 300, false)
	if err != nil || !took.Tie || took.Before.Holder != b.ID.ID {
		t.Fatalf("tie: %+v, %v", took, err)
	}
	// The same call again (a retried request) is the same take.
	if _, err := f.l.TakeOrder(ctx, tie, res, 300, false); err != nil {
		t.Fatalf("repeated take: %v", err)
	}
}

// The event that took a resource and crashed keeps it until its lease ends;
// its retry, a new run of the same event, takes it again at once.
func TestCrashedHolderKeepsItsResourceUntilItsLeaseEnds(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	res := "sub_" + awstest.Name("r")
	a := running(t, f, awstest.Name("evt_a"))
	if _, err := f.l.TakeOrder(ctx, a, res, 200, false); err != nil {
		t.Fatal(err)
	}
	// a's worker dies here. A newer event waits for a's lease.
	b := running(t, f, awstest.Name("evt_b"))
	orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, b, res, 300, false); return err }(), ledger.ErrBusy)
	// a's lease ends; a's retry claims it again and takes its resource
	// back (it is the holder), though b asked first.
	f.clock.Advance(2 * time.Minute)
	retry, err := f.l.ClaimEvent(ctx, a.ID, time.Minute, createdAs)
	if err != nil {
		t.Fatal(err)
	}
	if took, err := f.l.TakeOrder(ctx, retry, res, 200, false); err != nil || took.Before.HoldToken != a.Token {
		t.Fatalf("retry of the holder: %+v, %v", took, err)
	}
	// b's own lease ended too; its next run finds the retry live.
	b2, err := f.l.ClaimEvent(ctx, b.ID, time.Minute, createdAs)
	if err != nil {
		t.Fatal(err)
	}
	orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, b2, res, 300, false); return err }(), ledger.ErrBusy)
	// The retry fails (retryable, no step left started): its run is over,
	// and b takes the resource; a's next retry is then stale.
	if _, err := f.l.Fail(ctx, retry, "downstream 503", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.TakeOrder(ctx, b2, res, 300, false); err != nil {
		t.Fatalf("after the holder failed: %v", err)
	}
	f.clock.Advance(2 * time.Minute)
	again, err := f.l.ClaimEvent(ctx, a.ID, time.Minute, createdAs)
	if err != nil {
		t.Fatal(err)
	}
	orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, again, res, 200, false); return err }(), ledger.ErrStale)
}

// A run that failed with an at-most-once step left started keeps its
// lease's end (its request may still land downstream): it keeps its
// resource until then too.
func TestKeptLeaseKeepsTheResource(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	res := "sub_" + awstest.Name("r")
	a := running(t, f, awstest.Name("evt_a"))
	if _, err := f.l.TakeOrder(ctx, a, res, 200, false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Fail(ctx, a, "sms gateway timed out", time.Second, ledger.StepChange{Name: "sms", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	b := running(t, f, awstest.Name("evt_b"))
	orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, b, res, 300, false); return err }(), ledger.ErrBusy)
	f.clock.Advance(30 * time.Second)
	orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, b, res, 300, false); return err }(), ledger.ErrBusy)
	f.clock.Advance(31 * time.Second) // past a's lease end; b's own lease is still live
	if _, err := f.l.TakeOrder(ctx, b, res, 300, false); err != nil {
		t.Fatalf("after the kept lease ended: %v", err)
	}
}

// Two events of one resource taking it at once: exactly one takes it, the
// others are told busy or stale, never both taking it.
func TestConcurrentTakesOneWins(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	res := "sub_" + awstest.Name("r")
	const n = 12
	leases := make([]ledger.Lease, n)
	for i := range leases {
		leases[i] = running(t, f, awstest.Name("evt"))
	}
	var took, busy, stale int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, l := range leases {
		wg.Go(func() {
			_, err := f.l.TakeOrder(ctx, l, res, int64(100+i), false)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				took++
			case errors.Is(err, ledger.ErrBusy):
				busy++
			case errors.Is(err, ledger.ErrStale):
				stale++
			default:
				t.Errorf("take: %v", err)
			}
		})
	}
	wg.Wait()
	if took != 1 || busy+stale != n-1 {
		t.Fatalf("took %d, busy %d, stale %d", took, busy, stale)
	}
}

// force (a replay that asked to apply a stale event) takes the resource
// whatever position it holds, and its position becomes the resource's.
func TestForcedTakeRewinds(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	res := "sub_" + awstest.Name("r")
	b := running(t, f, awstest.Name("evt_b"))
	if _, err := f.l.TakeOrder(ctx, b, res, 300, false); err != nil {
		t.Fatal(err)
	}
	a := running(t, f, awstest.Name("evt_a"))
	// Forced or not, a live holder is waited for.
	orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, a, res, 100, true); return err }(), ledger.ErrBusy)
	f.l.Complete(ctx, b)
	if took, err := f.l.TakeOrder(ctx, a, res, 100, true); err != nil || took.Before.Position != 300 {
		t.Fatalf("forced: %+v, %v", took, err)
	}
	if o, _ := f.l.GetOrder(ctx, "stripe", "acme", res); o.Position != 100 || o.Holder != a.ID.ID {
		t.Fatalf("after the forced take: %+v", o)
	}
}

// An item past its retention counts as absent, whatever TTL has deleted.
func TestExpiredOrderItemIsAbsent(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Retention = 24 * time.Hour })
	ctx := t.Context()
	res := "sub_" + awstest.Name("r")
	b := running(t, f, awstest.Name("evt_b"))
	if _, err := f.l.TakeOrder(ctx, b, res, 300, false); err != nil {
		t.Fatal(err)
	}
	f.l.Complete(ctx, b)
	f.clock.Advance(25 * time.Hour)
	if _, err := f.l.GetOrder(ctx, "stripe", "acme", res); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("expired item: %v", err)
	}
	a := running(t, f, awstest.Name("evt_a"))
	if took, err := f.l.TakeOrder(ctx, a, res, 100, false); err != nil || took.Before != nil {
		t.Fatalf("take after expiry: %+v, %v", took, err)
	}
}

func TestTakeOrderRefusesWhatItCannotKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a := running(t, f, awstest.Name("evt_a"))
	for _, res := range []string{"", strings.Repeat("r", ledger.MaxResource+1), "\xff", strings.Repeat("#", 700)} {
		if _, err := f.l.TakeOrder(t.Context(), a, res, 1, false); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("resource %q: %v", res, err)
		}
	}
	if _, err := f.l.TakeOrder(t.Context(), ledger.Lease{ID: a.ID}, "sub_1", 1, false); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("no token: %v", err)
	}
}

func TestSkipRecordsWhy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	a := running(t, f, awstest.Name("evt_a"))
	rec, err := f.l.Skip(ctx, a, "stale: sub_1 is at 300")
	if err != nil || rec.Status != ledger.Done || rec.Skipped != "stale: sub_1 is at 300" || !rec.DueAt.Equal(a.Record.DueAt) || rec.Interrupted != 0 { // its due entry stays, as Complete leaves it
		t.Fatalf("skip: %+v, %v", rec, err)
	}
	if got, _ := f.l.Get(ctx, a.ID); got.Skipped != rec.Skipped || got.LeaseOwner != "" {
		t.Fatalf("stored %+v", got)
	}
	// Only the lease holder skips.
	other := a
	other.Token = "someone-else"
	if _, err := f.l.Skip(ctx, other, "again"); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("skip without the lease: %v", err)
	}
	if _, err := f.l.Skip(ctx, a, ""); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("skip without a reason: %v", err)
	}
}

// ReplayApplyStale marks the replay; a later plain replay forgets it.
func TestReplayApplyStaleIsForOneReplay(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	a := running(t, f, awstest.Name("evt_a"))
	if _, err := f.l.Bury(ctx, a, "boom"); err != nil {
		t.Fatal(err)
	}
	rec, err := f.l.ReplayApplyStale(ctx, a.ID)
	if err != nil || rec.Status != ledger.Received || !rec.AppliesStale() {
		t.Fatalf("replay: %+v, %v", rec, err)
	}
	lease, err := f.l.ClaimEvent(ctx, a.ID, time.Minute, createdAs)
	if err != nil || !lease.Record.AppliesStale() {
		t.Fatalf("the claim's record: %+v, %v", lease.Record, err)
	}
	f.l.Bury(ctx, lease, "boom again")
	f.clock.Advance(time.Second)
	if rec, err = f.l.Replay(ctx, a.ID); err != nil || rec.AppliesStale() {
		t.Fatalf("plain replay: %+v, %v", rec, err)
	}
}

// ResetOrder forgets a resource's position once its holder's run is over,
// so that the next event takes the resource as its first; it refuses while
// that run is live.
func TestResetOrder(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	res := "sub_" + awstest.Name("r")
	if _, err := f.l.ResetOrder(ctx, "stripe", "acme", res); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("reset of no item: %v", err)
	}
	far := running(t, f, awstest.Name("evt_far"))
	if _, err := f.l.TakeOrder(ctx, far, res, 1<<62, false); err != nil {
		t.Fatal(err)
	}
	oe := orderErr(t, func() error { _, err := f.l.ResetOrder(ctx, "stripe", "acme", res); return err }(), ledger.ErrBusy)
	if oe.Holder == nil || oe.Order.Holder != far.ID.ID {
		t.Fatalf("busy: %+v", oe)
	}
	if _, err := f.l.Complete(ctx, far); err != nil {
		t.Fatal(err)
	}
	real := running(t, f, awstest.Name("evt_real"))
	orderErr(t, func() error { _, err := f.l.TakeOrder(ctx, real, res, 100, false); return err }(), ledger.ErrStale)
	was, err := f.l.ResetOrder(ctx, "stripe", "acme", res)
	if err != nil || was.Position != 1<<62 || was.Holder != far.ID.ID {
		t.Fatalf("reset: %+v, %v", was, err)
	}
	if _, err := f.l.GetOrder(ctx, "stripe", "acme", res); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("after the reset: %v", err)
	}
	if took, err := f.l.TakeOrder(ctx, real, res, 100, false); err != nil || took.Before != nil {
		t.Fatalf("take after the reset: %+v, %v", took, err)
	}
	if _, err := f.l.ResetOrder(ctx, "stripe", "acme", ""); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("empty resource: %v", err)
	}
}

// EarlierRun says what the record shows of earlier runs that may have
// reached the handler: not the run in progress, not runs given back.
func TestEarlierRun(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	claim := func(id ledger.Key) ledger.Lease {
		t.Helper()
		f.clock.Advance(2 * time.Minute) // past any earlier lease and backoff
		l, err := f.l.ClaimEvent(ctx, id, time.Minute, createdAs)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a := running(t, f, awstest.Name("evt_a"))
	if got := a.Record.EarlierRun(); got != "" {
		t.Fatalf("first run: %q", got)
	}
	if _, err := f.l.Release(ctx, a, "resource busy", time.Second); err != nil {
		t.Fatal(err)
	}
	a = claim(a.ID)
	if got := a.Record.EarlierRun(); got != "" || a.Record.GivenBack != 1 || a.Record.Interrupted != 2 {
		t.Fatalf("after a run given back: %q (%+v)", got, a.Record)
	}
	a = claim(a.ID) // the run before it was killed
	if got := a.Record.EarlierRun(); got != "1 run interrupted" {
		t.Fatalf("after a killed run: %q", got)
	}
	if _, err := f.l.Fail(ctx, a, "503", time.Second, ledger.StepChange{Name: "charge", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	a = claim(a.ID)
	if got := a.Record.EarlierRun(); got != "step charge started, 1 run failed by the handler, 1 run interrupted" {
		t.Fatalf("after a failed run: %q", got)
	}
	if _, err := f.l.Bury(ctx, a, "gave up"); err != nil {
		t.Fatal(err)
	}
	if rec, err := f.l.Replay(ctx, a.ID); err != nil || rec.GivenBack != 0 || rec.Interrupted != 0 {
		t.Fatalf("replay resets the run counters: %+v, %v", rec, err)
	}
}
