package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

// run is what a test expects of one ledger.Run: its outcome and error
// ("" outcome: no answer), and when it started and ended.
type run struct {
	outcome    ledger.RunOutcome
	err        string
	start, end time.Time
}

func runsOf(recs []ledger.Run) []run {
	out := make([]run, len(recs))
	for i, r := range recs {
		out[i] = run{r.Outcome, r.Error, r.Start, r.End}
	}
	return out
}

func sameRuns(t *testing.T, what string, got []ledger.Run, want ...run) {
	t.Helper()
	g := runsOf(got)
	if len(g) != len(want) {
		t.Fatalf("%s: runs %+v, want %+v", what, g, want)
	}
	for i := range want {
		if g[i].outcome != want[i].outcome || g[i].err != want[i].err || !g[i].start.Equal(want[i].start) || !g[i].end.Equal(want[i].end) {
			t.Fatalf("%s: run %d is %+v, want %+v (all: %+v)", what, i, g[i], want[i], g)
		}
	}
}

// TestRunHistory: the claim starts a run and the write that answers it
// ends it, with its outcome and the start of its error; a run that died
// keeps no end until the reclaimer finds its lease expired; the record
// keeps the last MaxRuns. No write is added for any of it.
func TestRunHistory(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := newID(t)
	create(t, f, id)
	tick := func() time.Time { f.clock.Advance(time.Second); return f.clock.Now() }

	t0 := tick()
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sameRuns(t, "claimed", lease.Record.Runs, run{start: t0})
	t1 := tick()
	long := "downstream 503: " + strings.Repeat("é", 60)
	rec, err := f.l.Fail(ctx, lease, long, 0)
	if err != nil {
		t.Fatal(err)
	}
	short := rec.Runs[0].Error
	if len(short) > ledger.MaxRunError || !strings.HasPrefix(long, short) || rec.LastError != long {
		t.Fatalf("run error %q (%d bytes), last error %q: want the start of the error, at most %d bytes, and all of it in last_error", short, len(short), rec.LastError, ledger.MaxRunError)
	}
	sameRuns(t, "failed", rec.Runs, run{ledger.RunFailed, short, t0, t1})

	// A worker dies mid-run: its run keeps no end; the next claim (after
	// the lease) starts another.
	t2 := tick()
	if _, err := f.l.Claim(ctx, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute)
	t3 := f.clock.Now()
	lease, err = f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sameRuns(t, "taken over", lease.Record.Runs, run{ledger.RunFailed, short, t0, t1}, run{start: t2}, run{start: t3})

	// The fourth run pushes the first out; Complete ends it done.
	t4 := tick()
	done, err := f.l.Complete(ctx, lease)
	if err != nil {
		t.Fatal(err)
	}
	sameRuns(t, "done", done.Runs, run{ledger.RunFailed, short, t0, t1}, run{start: t2}, run{ledger.RunDone, "", t3, t4})
	got, err := f.l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sameRuns(t, "read back", got.Runs, run{ledger.RunFailed, short, t0, t1}, run{start: t2}, run{ledger.RunDone, "", t3, t4})

	// More runs than the record keeps: the oldest fall off.
	other := newID(t)
	create(t, f, other)
	var want []run
	for i := range ledger.MaxRuns + 2 {
		start := tick()
		lease, err := f.l.Claim(ctx, other, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cause := "attempt " + string(rune('a'+i))
		end := tick()
		if _, err := f.l.Release(ctx, lease, cause, 0); err != nil {
			t.Fatal(err)
		}
		want = append(want, run{ledger.RunGivenBack, cause, start, end})
	}
	got, err = f.l.Get(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	sameRuns(t, "many runs", got.Runs, want[len(want)-ledger.MaxRuns:]...)
}

// TestRunHistoryEnds: every write that answers a run, or finds it dead,
// ends it with its own outcome.
func TestRunHistoryEnds(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	claim := func(id ledger.Key) (ledger.Lease, time.Time) {
		t.Helper()
		start := f.clock.Now()
		lease, err := f.l.Claim(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Second)
		return lease, start
	}
	last := func(r ledger.Record) ledger.Run { return r.Runs[len(r.Runs)-1] }
	check := func(what string, r ledger.Record, err error, start time.Time, want ledger.RunOutcome, wantErr string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := last(r)
		if got.Outcome != want || got.Error != wantErr || !got.Start.Equal(start) || !got.End.Equal(f.clock.Now()) {
			t.Fatalf("%s: last run %+v, want %s (%q) from %v to %v", what, got, want, wantErr, start, f.clock.Now())
		}
	}

	id := newID(t)
	create(t, f, id)
	lease, start := claim(id)
	rec, err := f.l.Bury(ctx, lease, "permanent: card declined")
	check("bury", rec, err, start, ledger.RunDead, "permanent: card declined")

	id = newID(t)
	create(t, f, id)
	lease, start = claim(id)
	rec, err = f.l.Skip(ctx, lease, "stale: position 3 is behind 5")
	check("skip", rec, err, start, ledger.RunSkipped, "stale: position 3 is behind 5")

	// The reclaimer ends a run whose lease it finds expired.
	id = newID(t)
	create(t, f, id)
	_, start = claim(id)
	f.clock.Advance(2 * time.Minute)
	stale, err := f.l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rec, err = f.l.Reset(ctx, stale, f.clock.Now())
	check("reset", rec, err, start, ledger.RunInterrupted, "")
	_, start = claim(id)
	f.clock.Advance(2 * time.Minute)
	stale, err = f.l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rec, err = f.l.BuryStale(ctx, stale, "gave up")
	check("bury stale", rec, err, start, ledger.RunInterrupted, "")
	if len(rec.Runs) != 2 || rec.Runs[0].Outcome != ledger.RunInterrupted {
		t.Fatalf("runs after reset, claim, bury stale: %+v", rec.Runs)
	}
}

// TestStepTimes: an at-most-once step done keeps when it was started, and
// a step done on its check's word says so.
func TestStepTimes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := newID(t)
	create(t, f, id)
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	started := f.clock.Now()
	if lease.Record, err = f.l.SaveSteps(ctx, lease, ledger.StepChange{Name: "charge", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(3 * time.Second)
	rec, err := f.l.Complete(ctx, lease,
		ledger.StepChange{Name: "charge", Status: ledger.StepDone, Result: "ch_1"},
		ledger.StepChange{Name: "notify", Status: ledger.StepDone, Result: "n_1", Checked: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for what, r := range map[string]ledger.Record{"answer": rec, "read back": got} {
		charge, notify := r.Steps["charge"], r.Steps["notify"]
		if !charge.Started.Equal(started) || !charge.At.Equal(f.clock.Now()) || charge.Checked {
			t.Errorf("%s: charge %+v: want started %v, done %v, not checked", what, charge, started, f.clock.Now())
		}
		if !notify.Started.IsZero() || !notify.Checked || notify.Status != ledger.StepDone {
			t.Errorf("%s: notify %+v: want done on its check's word, no start", what, notify)
		}
	}
}
