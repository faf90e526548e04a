package reclaimer_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

// done creates an event and completes it, as the processor does.
func (f *fixture) done(t *testing.T, key string) ledger.Key {
	t.Helper()
	id := f.event(t, key)
	lease, err := f.l.Claim(t.Context(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Complete(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	return id
}

// racingClaim is the ledger with a worker that claims one record in the
// moment between the reclaimer's read of it and its Requeue: the Requeue
// meets a conflict, and the claim leaves the record's due time where it
// was.
type racingClaim struct {
	*ledger.Ledger
	raw   *ledger.Ledger
	id    ledger.Key
	lease time.Duration
	fired bool
}

func (r *racingClaim) Requeue(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error) {
	if rec.Key == r.id && !r.fired {
		r.fired = true
		if _, err := r.raw.Claim(ctx, rec.Key, r.lease); err != nil {
			return ledger.Record{}, err
		}
	}
	return r.Ledger.Requeue(ctx, rec, next)
}

// A record the run could not settle holds its shard's mark back. Here a
// worker claims an overdue record just as the reclaimer re-drives it (a
// conflict), then dies: the claim did not move the due time, so the record
// is found again only because the mark stayed before it, and its expired
// lease is reset and re-driven. Regression for a mark that moved past every
// entry the walk read: the record stayed processing forever.
func TestAConflictHoldsTheMarkUntilTheRecordIsSettled(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l := f.h.Ledger.(*ledger.Ledger)
	id := f.event(t, "evt_claimed_in_between")
	other := f.event(t, "evt_plain_lost")
	f.h.Lock, f.h.Lag = l, time.Second
	f.h.Ledger = &racingClaim{Ledger: l, raw: f.l, id: id, lease: 30 * time.Second}
	f.clock.Advance(2 * time.Minute)
	rep := f.run(t)
	if rep.Conflicts != 1 || rep.Requeued != 1 {
		t.Fatalf("run with a racing claim: %+v", rep)
	}
	if got := f.drain(t); len(got) != 1 || got[0] != other.ID {
		t.Fatalf("queue %v, want only %s", got, other.ID)
	}
	if rec := f.get(t, id); rec.Status != ledger.Processing || rec.Reclaims != 0 {
		t.Fatalf("the claimed record: %+v", rec)
	}
	// The worker dies; after its lease and the grace (and before the other
	// record's backoff) the record is reset.
	f.clock.Advance(45 * time.Second)
	rep = f.run(t)
	if rep.Reset != 1 {
		t.Fatalf("after the worker died: %+v; the record was lost behind the mark", rep)
	}
	if got := f.drain(t); len(got) != 1 || got[0] != id.ID {
		t.Fatalf("queue %v, want %s", got, id.ID)
	}
}

// Every transition that leaves a record for someone else to finish gives it
// a due time at or after the write, so the next run, which walks from a mark
// that trails its own start by the lag, finds it: a failure with no retry
// delay, a replayed dead record, a reset.
func TestRecordsDueAgainAreFoundAfterTheMark(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l := f.h.Ledger.(*ledger.Ledger)
	f.h.Lock = l
	failing := f.event(t, "evt_fails_at_once")
	dead := f.event(t, "evt_dead_then_replayed")
	f.clock.Advance(2 * time.Minute)
	f.run(t) // re-drives both; marks move to the run's start less the lag
	f.drain(t)
	marks, err := l.ReadDueMarks(t.Context())
	if err != nil || len(marks) == 0 {
		t.Fatalf("no marks stored: %v %v", marks, err)
	}
	lease, err := f.l.Claim(t.Context(), failing, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Fail(t.Context(), lease, "downstream 503", 0); err != nil {
		t.Fatal(err)
	}
	lease, err = f.l.Claim(t.Context(), dead, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Bury(t.Context(), lease, "permanent"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Replay(t.Context(), dead); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute) // the replay's ReclaimAfter
	rep := f.run(t)
	if rep.Requeued != 2 {
		t.Fatalf("failed and replayed records: %+v", rep)
	}
	if got := f.drain(t); len(got) != 2 {
		t.Fatalf("queue %v", got)
	}
}

// A run that stops before it read a shard to the end leaves the shard's
// mark before the first entry it did not handle, so the next run (with no
// continuation) re-drives the rest.
func TestARunCutShortLeavesTheRestToTheNext(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ids := f.backlog(t, "evt_cut_short", 60)
	l := f.h.Ledger.(*ledger.Ledger)
	f.h.Lock, f.h.Lag = l, time.Second
	f.clock.Advance(time.Minute) // overdue by a minute: well before the run's start less the lag
	f.h.Ledger = slowLedger{Ledger: l, advance: func() { f.clock.Advance(time.Second) }}
	f.h.PerShard, f.h.Workers, f.h.Margin = 2, 1, 10*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second) // about 11 of the 30 pages
	defer cancel()
	first, err := f.h.Handle(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Stopped != reclaimer.StopBudget || first.Redriven() == 0 || first.Redriven() >= len(ids) {
		t.Fatalf("cut-short run: %+v", first)
	}
	rest := f.run(t)
	if first.Redriven()+rest.Redriven() != len(ids) || rest.Stopped != reclaimer.StopDrained {
		t.Fatalf("re-driven %d + %d of %d (%+v)", first.Redriven(), rest.Redriven(), len(ids), rest)
	}
	if got := f.drainAll(t); len(got.count) != len(ids) {
		t.Fatalf("%d keys on the queue, want %d", len(got.count), len(ids))
	}
}

// An idle stack writes no custom metric: the reclaimer runs every minute,
// and a metric that receives data every hour costs $0.30 a month. A run
// that finds nothing, with the dead-letter queue empty, writes none.
func TestAnIdleRunWritesNoMetric(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, dlq := awstest.Queues(t, awstest.Config(t), queue.QueueSpec{})
	f.h.DeadLetters = &reclaimer.DeadLetters{API: f.sqs, URL: dlq, Ledger: f.l}
	f.h.Lock = f.h.Ledger.(*ledger.Ledger)
	f.done(t, "evt_done_long_ago")
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	for range 3 {
		f.clock.Advance(time.Minute)
		f.run(t)
	}
	if emf.Len() != 0 {
		t.Fatalf("idle runs wrote metrics:\n%s", emf.String())
	}
}
