package reclaimer_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// lossy is a queue that silently loses what is sent to it: every entry is
// answered as sent, and none arrives. Its depth is the real queue's.
type lossy struct{ *queue.BatchSender }

func (lossy) SendBatch(_ context.Context, msgs []queue.Message) []error {
	return make([]error, len(msgs))
}

// toDue moves the clock to id's due time.
func (f *fixture) toDue(t *testing.T, id ledger.Key) {
	t.Helper()
	f.clock.Advance(max(0, f.get(t, id).DueAt.Sub(f.clock.Now())))
}

// TestLostMessagesDoNotLengthenTheWait: while the queue loses every message,
// the reclaimer keeps re-driving a record nobody claims, into a queue with
// nothing waiting or in flight. Each lost re-send used to double the wait
// before the next (1, 2, 4 ... 60 minutes), so a record re-sent often
// during a long outage waited up to an hour after the queue worked again.
// The next look now stays within the first backoff step whatever the
// reclaims, and the first run after the queue returns re-drives it.
func TestLostMessagesDoNotLengthenTheWait(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.event(t, "evt_lost_again")
	healthy := f.h.Queue.(*queue.BatchSender)
	f.h.Queue = lossy{healthy}
	for range 8 { // eight doublings would reach the hour's cap
		f.toDue(t, id)
		if rep := f.run(t); rep.Requeued != 1 {
			t.Fatalf("report %+v", rep)
		}
		rec := f.get(t, id)
		if wait := rec.DueAt.Sub(f.clock.Now()); wait > time.Minute {
			t.Fatalf("after %d lost re-sends the next look is %v away; want at most a minute", rec.Reclaims, wait)
		}
	}
	f.h.Queue = healthy // the queue works again
	f.toDue(t, id)
	if rep := f.run(t); rep.Requeued != 1 {
		t.Fatalf("first run after the queue returned: %+v", rep)
	}
	if keys := f.drain(t); len(keys) != 1 || keys[0] != id.ID {
		t.Fatalf("queue %v", keys)
	}
}

// TestAConsumerThatTakesMessagesStillBacksOff: the short wait is only for
// messages that are gone. A consumer that takes the messages and dies
// before claiming leaves them in flight, and one that claims and dies
// leaves the record processing: either way the wait doubles as before, so
// a broken consumer is not sent the event every minute.
func TestAConsumerThatTakesMessagesStillBacksOff(t *testing.T) {
	t.Parallel()
	f := setup(t)
	held := f.event(t, "evt_taken_never_claimed")
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		f.toDue(t, held)
		if rep := f.run(t); rep.Requeued != 1 {
			t.Fatalf("re-send %d: %+v", i+1, rep)
		}
		if wait := f.get(t, held).DueAt.Sub(f.clock.Now()); wait != want {
			t.Fatalf("re-send %d with messages in flight: next look in %v, want %v", i+1, wait, want)
		}
		// Taken and kept in flight, as by a consumer that dies before its claim.
		if _, err := f.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &f.queue, MaxNumberOfMessages: 10, VisibilityTimeout: 600}); err != nil {
			t.Fatal(err)
		}
	}

	g := setup(t)
	crashed := g.event(t, "evt_claimed_and_crashed")
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		g.crash(t, crashed)
		if rep := g.run(t); rep.Reset != 1 {
			t.Fatalf("reset %d: %+v", i+1, rep)
		}
		if wait := g.get(t, crashed).DueAt.Sub(g.clock.Now()).Round(time.Second); wait != want { // due times are in ms
			t.Fatalf("reset %d: next look in %v, want %v", i+1, wait, want)
		}
		g.drain(t) // the queue is idle again: the record's own state says a consumer took it
	}
}
