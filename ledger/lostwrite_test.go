package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/ledger"
)

// lostUpdate sends every UpdateItem twice and returns the second answer, as
// the SDK does when a write succeeded but its answer was lost (a client
// timeout) and the request is retried.
type lostUpdate struct{ *dynamodb.Client }

func (c lostUpdate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if _, err := c.Client.UpdateItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return c.Client.UpdateItem(ctx, in, o...)
}

// TestReclaimerWriteWhoseAnswerWasLost is the regression test for a lost
// re-drive: a Requeue or Reset whose answer was lost came back from the
// SDK's retry as ErrConflict ("someone else acted first"), so the reclaimer
// skipped the enqueue, and the event waited a whole backoff (minutes) with a
// reclaim spent; Replay told the operator someone else had moved the event
// and did not enqueue it. Each transition now carries a request token and
// recognises its own retried write.
func TestReclaimerWriteWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	l, err := ledger.New(lostUpdate{f.db}, ledger.Options{Table: f.table, Shards: 4, ReclaimAfter: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	next := f.clock.Now().Add(time.Hour).Truncate(time.Millisecond)

	received := newID(t)
	create(t, f, received)
	rec, _ := f.l.Get(ctx, received)
	got, err := l.Requeue(ctx, rec, next)
	if err != nil || got.Reclaims != 1 || !got.DueAt.Equal(next) || got.Status != ledger.Received {
		t.Fatalf("requeue: %+v, %v; want our own requeue recognised", got, err)
	}
	// A stale read is still a genuine conflict.
	if _, err := l.Requeue(ctx, rec, next); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("requeue from a stale version: %v, want ErrConflict", err)
	}

	leased := newID(t)
	create(t, f, leased)
	if _, err := f.l.Claim(ctx, leased, time.Second); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Second)
	rec, _ = f.l.Get(ctx, leased)
	got, err = l.Reset(ctx, rec, next)
	if err != nil || got.Status != ledger.Received || got.Reclaims != 1 || got.LeaseOwner != "" {
		t.Fatalf("reset: %+v, %v; want our own reset recognised", got, err)
	}

	dead := newID(t)
	create(t, f, dead)
	c, _ := f.l.Claim(ctx, dead, time.Minute)
	if _, err := f.l.Bury(ctx, c, "permanent"); err != nil {
		t.Fatal(err)
	}
	got, err = l.Replay(ctx, dead)
	if err != nil || got.Status != ledger.Received || got.Attempts != 0 {
		t.Fatalf("replay: %+v, %v; want our own replay recognised", got, err)
	}
	if _, err := l.Replay(ctx, dead); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("second replay of a received event: %v, want ErrConflict", err)
	}
}

// answerLost performs every write and then reports a client timeout, as the
// SDK does when an attempt's answer is lost and it may not retry (its retry
// quota is spent); with skip set it fails before sending anything.
type answerLost struct {
	*dynamodb.Client
	skip bool
}

var errLostAnswer = errors.New("request send failed: net/http: request canceled (Client.Timeout exceeded while awaiting headers); retry quota exceeded")

func (c answerLost) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if !c.skip {
		c.Client.PutItem(ctx, in, o...)
	}
	return nil, errLostAnswer
}

func (c answerLost) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !c.skip {
		c.Client.UpdateItem(ctx, in, o...)
	}
	return nil, errLostAnswer
}

// TestWriteWhoseAnswerWasLostWithoutRetry is the regression test for
// re-drives delayed by minutes under heavy AWS faults: when the SDK could
// not retry a write whose answer was lost, Create, Claim, the reclaimer's
// transitions and Replay reported ErrUnavailable although the write had
// happened, and the reclaimer, unsure, skipped the enqueue while the record
// already carried the next due time (1, 2, 4 ... minutes out). Each now reads
// the record back and recognises its own write by its token.
func TestWriteWhoseAnswerWasLostWithoutRetry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	opts := ledger.Options{Table: f.table, Shards: 4, ReclaimAfter: time.Minute, Now: f.clock.Now}
	lost, _ := ledger.New(answerLost{Client: f.db}, opts)
	never, _ := ledger.New(answerLost{Client: f.db, skip: true}, opts)

	id := newID(t)
	if _, _, err := never.Create(ctx, ledger.NewEvent{Key: id}); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("create that never reached the table: %v, want ErrUnavailable", err)
	}
	if rec, created, err := lost.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid"}); err != nil || !created || rec.Status != ledger.Received {
		t.Fatalf("create whose answer was lost: %+v created=%v err=%v; want created", rec, created, err)
	}
	rec, _ := f.l.Get(ctx, id)
	next := f.clock.Now().Add(time.Hour).Truncate(time.Millisecond)
	if _, err := never.Requeue(ctx, rec, next); !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("requeue that never reached the table: %v, want ErrUnavailable", err)
	}
	if got, err := lost.Requeue(ctx, rec, next); err != nil || got.Reclaims != 1 || !got.DueAt.Equal(next) {
		t.Fatalf("requeue whose answer was lost: %+v, %v", got, err)
	}
	claimed, err := lost.Claim(ctx, id, time.Minute)
	if err != nil || claimed.Token == "" {
		t.Fatalf("claim whose answer was lost: %+v, %v", claimed, err)
	}
	if _, err := f.l.Bury(ctx, claimed, "permanent"); err != nil {
		t.Fatalf("the read-back lease token does not own the lease: %v", err)
	}
	if got, err := lost.Replay(ctx, id); err != nil || got.Status != ledger.Received {
		t.Fatalf("replay whose answer was lost: %+v, %v", got, err)
	}
}

// TestFinalWriteWhoseAnswerWasLost is the regression test for a Complete
// (or Fail, or Bury) whose answer was lost: the SDK's retry found the
// record done and the lease gone, and reported ErrLeaseLost, so the worker
// left the message to be redelivered although it had finished the event.
// Final writes now sign the record with the lease token and recognise
// their own retried write, by the retry's refusal or by reading it back.
func TestFinalWriteWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	retried, err := ledger.New(lostUpdate{f.db}, ledger.Options{Table: f.table, Shards: 4, ReclaimAfter: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	unanswered, err := ledger.New(answerLost{Client: f.db}, ledger.Options{Table: f.table, Shards: 4, ReclaimAfter: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		l     *ledger.Ledger
		write func(l *ledger.Ledger, lease ledger.Lease) (ledger.Record, error)
		want  ledger.Status
	}{
		{"complete retried", retried, func(l *ledger.Ledger, lease ledger.Lease) (ledger.Record, error) {
			return l.Complete(ctx, lease, ledger.StepChange{Name: "charge", Status: ledger.StepDone, Result: "ch_1"})
		}, ledger.Done},
		{"fail retried", retried, func(l *ledger.Ledger, lease ledger.Lease) (ledger.Record, error) {
			return l.Fail(ctx, lease, "503", time.Minute)
		}, ledger.Failed},
		{"bury retried", retried, func(l *ledger.Ledger, lease ledger.Lease) (ledger.Record, error) {
			return l.Bury(ctx, lease, "permanent")
		}, ledger.Dead},
		{"complete unanswered", unanswered, func(l *ledger.Ledger, lease ledger.Lease) (ledger.Record, error) {
			return l.Complete(ctx, lease)
		}, ledger.Done},
	} {
		id := newID(t)
		create(t, f, id)
		lease, err := f.l.Claim(ctx, id, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.write(tc.l, lease)
		if err != nil || got.Status != tc.want {
			t.Errorf("%s: %+v, %v; want our own write recognised", tc.name, got, err)
		}
	}
	// Another worker's final write is still a lost lease for this one.
	id := newID(t)
	create(t, f, id)
	a, _ := f.l.Claim(ctx, id, time.Second)
	f.clock.Advance(2 * time.Second)
	b, _ := f.l.Claim(ctx, id, time.Minute)
	if _, err := f.l.Complete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := retried.Complete(ctx, a); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("the old owner's complete after the new owner's: %v, want ErrLeaseLost", err)
	}
}
