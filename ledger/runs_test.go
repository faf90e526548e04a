package ledger_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/ledger"
)

// counts is what a record says about its runs.
type counts struct{ attempts, failures, interrupted int }

func countsOf(r ledger.Record) counts { return counts{r.Attempts, r.Failures, r.Interrupted} }

// TestRunCounters pins how the record counts its runs: attempts every
// claim, failures only the handler's own (Fail), interrupted every run that
// ended without an answer (a takeover after the lease ran out, a reset by
// the reclaimer, a Release after the infrastructure failed the run), and
// Replay starting them all again.
func TestRunCounters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := newID(t)
	create(t, f, id)
	step := func(what string, want counts, do func() (ledger.Record, error)) ledger.Record {
		t.Helper()
		rec, err := do()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := countsOf(rec); got != want {
			t.Fatalf("%s: attempts/failures/interrupted %v, want %v", what, got, want)
		}
		return rec
	}
	claim := func() (ledger.Record, error) {
		lease, err := f.l.Claim(ctx, id, time.Minute)
		return lease.Record, err
	}

	// The running claim counts as interrupted until it answers.
	step("first claim", counts{1, 0, 1}, claim)
	f.clock.Advance(2 * time.Minute) // the worker died
	step("takeover", counts{2, 0, 2}, claim)
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err == nil {
		t.Fatalf("claimed a live lease: %+v", lease)
	}
	f.clock.Advance(2 * time.Minute)
	lease, err = f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	step("handler failure", counts{3, 1, 2}, func() (ledger.Record, error) { return f.l.Fail(ctx, lease, "downstream 503", 0) })
	lease, _ = f.l.Claim(ctx, id, time.Minute)
	step("infrastructure failure", counts{4, 1, 3}, func() (ledger.Record, error) {
		return f.l.Release(ctx, lease, "read payload: throttled", 0)
	})
	rec, _ := f.l.Get(ctx, id)
	if rec.Status != ledger.Failed || rec.LastError != "read payload: throttled" || rec.LeaseOwner != "" {
		t.Fatalf("after Release: %+v", rec)
	}
	// The reclaimer takes an expired lease back: the run stays counted.
	lease, _ = f.l.Claim(ctx, id, time.Minute)
	f.clock.Advance(2 * time.Minute)
	rec, _ = f.l.Get(ctx, id)
	step("reset", counts{5, 1, 4}, func() (ledger.Record, error) { return f.l.Reset(ctx, rec, f.clock.Now().Add(time.Minute)) })
	lease, _ = f.l.Claim(ctx, id, time.Minute)
	done := step("complete", counts{6, 1, 4}, func() (ledger.Record, error) { return f.l.Complete(ctx, lease) })
	if done.Status != ledger.Done {
		t.Fatalf("complete: %+v", done)
	}

	// Bury is an answer too; Replay starts every count again.
	other := newID(t)
	create(t, f, other)
	lease, _ = f.l.Claim(ctx, other, time.Minute)
	step("bury", counts{1, 1, 0}, func() (ledger.Record, error) { return f.l.Bury(ctx, lease, "card declined") })
	f.clock.Advance(time.Hour)
	replayed := step("replay", counts{0, 0, 0}, func() (ledger.Record, error) { return f.l.Replay(ctx, other) })
	if !replayed.ReplayedAt.Equal(f.clock.Now()) {
		t.Fatalf("replayed_at %v, want now %v", replayed.ReplayedAt, f.clock.Now())
	}
}

// TestRunCountersOnOlderRecords: a record written before the counters
// existed (no failures, no interrupted attribute), claimed by an older
// processor and answered by this one, still takes every write, and never
// shows a negative count.
func TestRunCountersOnOlderRecords(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := newID(t)
	create(t, f, id)
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// What an older claim left: no counters.
	if _, err := f.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(f.table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: id.PK()}, "sk": &types.AttributeValueMemberS{Value: "r"}},
		UpdateExpression: aws.String("REMOVE interrupted, failures"),
	}); err != nil {
		t.Fatal(err)
	}
	rec, err := f.l.Fail(ctx, lease, "downstream 503", 0)
	if err != nil {
		t.Fatalf("fail on an older record: %v", err)
	}
	if got := countsOf(rec); got != (counts{1, 1, 0}) {
		t.Fatalf("counts %v, want 1 attempt, 1 failure, none interrupted", got)
	}
	if _, err := f.l.Claim(ctx, id, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestFailAndReleaseCostOneWrite: a run's answer stays one UpdateItem of
// one write unit, whichever counter it moves.
func TestFailAndReleaseCostOneWrite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	for _, release := range []bool{false, true} {
		id := newID(t)
		create(t, f, id)
		lease, err := f.l.Claim(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f.meter.Reset()
		if release {
			_, err = f.l.Release(ctx, lease, "read payload: throttled", time.Minute)
		} else {
			_, err = f.l.Fail(ctx, lease, "downstream 503", time.Minute)
		}
		if err != nil {
			t.Fatal(err)
		}
		if snap := f.meter.Snapshot(); snap["DynamoDB.UpdateItem"] != 1 || len(snap) != 1 {
			t.Errorf("release=%v: %v, want one UpdateItem", release, snap)
		}
	}
}
