package reclaimer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

// backlog creates n overdue records (with payloads) for tenants t0..t3.
func (f *fixture) backlog(t *testing.T, prefix string, n int) []ledger.Key {
	t.Helper()
	ids := make([]ledger.Key, n)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				id := ledger.Key{Source: "stripe", Tenant: fmt.Sprintf("t%d", i%4), ID: fmt.Sprintf("%s_%04d", prefix, i)}
				ids[i] = id
				if _, _, err := f.l.Create(context.Background(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
					failed.Add(1)
				}
				if err := f.l.PutPayload(context.Background(), id, []byte(`{"id":"`+id.ID+`"}`), "x"); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d writes of the backlog failed", failed.Load())
	}
	f.clock.Advance(time.Minute)
	return ids
}

// consumed is what a consumer took off the queue: per key, how often, and
// the message group of each.
type consumed struct {
	mu     sync.Mutex
	count  map[string]int
	group  map[string]string
	order  []string
	maxVis int
}

// consume takes messages off the queue (and deletes them) until stop is
// closed and the queue stayed empty, pausing pause between receives.
//
// The emulator sometimes cuts a ReceiveMessage answer short; the SDK then
// retries, and the messages of the lost answer stay in flight, unseen by
// this consumer, until their visibility timeout ends. So receives use a
// short timeout, and the queue counts as empty only when nothing is in
// flight either (or after a bound, so a stuck queue fails the caller's
// counts rather than hanging).
func (f *fixture) consume(t *testing.T, c *consumed, pause time.Duration, stop <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	empty := 0
	var settleBy time.Time
	for {
		out, err := f.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &f.queue, MaxNumberOfMessages: 10, VisibilityTimeout: consumeVisibility,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
		if err != nil {
			t.Error(err)
			return
		}
		if len(out.Messages) == 0 {
			select {
			case <-stop:
				if empty++; empty >= 3 {
					if settleBy.IsZero() {
						settleBy = time.Now().Add(3 * consumeVisibility * time.Second)
					}
					if f.inFlight(t) == 0 || time.Now().After(settleBy) {
						return
					}
					time.Sleep(500 * time.Millisecond)
					continue
				}
			default:
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		empty = 0
		var del []types.DeleteMessageBatchRequestEntry
		c.mu.Lock()
		for i, m := range out.Messages {
			msg, err := queue.Decode(aws.ToString(m.Body))
			if err != nil {
				t.Errorf("unreadable message: %v", err)
				continue
			}
			c.count[msg.ID]++
			c.group[msg.ID] = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
			c.order = append(c.order, msg.ID)
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		c.mu.Unlock()
		if _, err := f.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &f.queue, Entries: del}); err != nil {
			t.Error(err)
		}
		time.Sleep(pause)
	}
}

// consumeVisibility is how long a received message stays hidden from
// consume, in seconds: long enough to delete it, short enough that a message
// whose receive answer was lost comes back within the test.
const consumeVisibility = 10

// inFlight is the queue's count of received, undeleted messages.
func (f *fixture) inFlight(t *testing.T) int {
	t.Helper()
	out, err := f.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &f.queue,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Logf("in-flight count: %v", err)
		return 0
	}
	n, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return n
}

func newConsumed() *consumed { return &consumed{count: map[string]int{}, group: map[string]string{}} }

// drainAll takes everything left on the queue.
func (f *fixture) drainAll(t *testing.T) *consumed {
	t.Helper()
	c := newConsumed()
	stop := make(chan struct{})
	close(stop)
	f.consume(t, c, 0, stop)
	return c
}

func TestConcurrentRunsOverABacklogNeverDoubleEnqueue(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.PerShard = 7 // many pages, so the runs interleave
	ids := f.backlog(t, "evt_race", 240)
	var wg sync.WaitGroup
	reps := make([]reclaimer.Report, 5)
	for i := range reps {
		wg.Go(func() {
			rep, err := f.h.Handle(context.Background(), nil)
			if err != nil {
				t.Error(err)
			}
			reps[i] = rep
		})
	}
	wg.Wait()
	got := f.drainAll(t)
	redriven, conflicts := 0, 0
	for _, r := range reps {
		redriven += r.Redriven()
		conflicts += r.Conflicts
	}
	for _, id := range ids {
		if n := got.count[id.ID]; n != 1 {
			t.Errorf("%s enqueued %d times by 5 concurrent runs", id.ID, n)
		}
		if g := got.group[id.ID]; g != id.Tenant {
			t.Errorf("%s arrived with message group %q, want its tenant %q", id.ID, g, id.Tenant)
		}
		if rec := f.get(t, id); rec.Reclaims != 1 {
			t.Errorf("%s reclaimed %d times", id.ID, rec.Reclaims)
		}
	}
	if len(got.count) != len(ids) || redriven != len(ids) {
		t.Errorf("queue holds %d keys, runs report %d re-driven, want %d each (conflicts %d)", len(got.count), redriven, len(ids), conflicts)
	}
	t.Logf("5 concurrent runs over %d records: %d re-driven, %d conflicts (another run acted first)", len(ids), redriven, conflicts)
}

func TestFailedBatchEntriesAreRedrivenLater(t *testing.T) {
	t.Parallel()
	var failedOnce sync.Map
	inj := &awstest.BatchEntryFailures{Fail: func(body string) bool {
		if !strings.Contains(body, `"evt_flaky_`) {
			return false
		}
		_, seen := failedOnce.LoadOrStore(body[strings.Index(body, `"evt_flaky_`):][:20], true)
		return !seen // each flaky record's first send fails
	}}
	f := setup(t, inj.APIOption)
	f.h.RetryAfter = 15 * time.Second
	var ids []ledger.Key
	for i := range 12 {
		prefix := "evt_fine"
		if i%3 == 0 {
			prefix = "evt_flaky"
		}
		ids = append(ids, f.event(t, fmt.Sprintf("%s_%02d", prefix, i)))
	}
	f.clock.Advance(time.Minute)
	rep := f.run(t)
	if rep.Unsent != 4 || rep.Requeued != 8 || inj.Failed.Load() != 4 {
		t.Fatalf("first run: %+v (entries failed: %d)", rep, inj.Failed.Load())
	}
	first := f.drainAll(t)
	for _, id := range ids {
		flaky := strings.HasPrefix(id.ID, "evt_flaky")
		if n := first.count[id.ID]; flaky && n != 0 || !flaky && n != 1 {
			t.Errorf("after the first run %s is on the queue %d times", id.ID, n)
		}
		rec := f.get(t, id)
		if flaky && (rec.Reclaims != 0 || !rec.DueAt.Equal(f.clock.Now().Add(15*time.Second).Truncate(time.Millisecond))) {
			t.Errorf("%s after its failed send: reclaims %d, due %v; want the reclaim taken back and due in 15 s", id.ID, rec.Reclaims, rec.DueAt)
		}
	}
	if rep := f.run(t); rep.Redriven() != 0 {
		t.Fatalf("re-driven again before RetryAfter: %+v", rep)
	}
	f.clock.Advance(15 * time.Second)
	if rep := f.run(t); rep.Requeued != 4 || rep.Unsent != 0 {
		t.Fatalf("run after RetryAfter: %+v", rep)
	}
	second := f.drainAll(t)
	for _, id := range ids {
		if n := first.count[id.ID] + second.count[id.ID]; n != 1 {
			t.Errorf("%s enqueued %d times in all", id.ID, n)
		}
	}
}

// TestRejectedEntriesAreRetriedUntilTheGiveUpTime: a message the queue
// refuses counts its reclaim (the backoff grows), but the queue's refusal
// is not the handler's failure: the record is re-driven until its give-up
// time, then dead.
func TestRejectedEntriesAreRetriedUntilTheGiveUpTime(t *testing.T) {
	t.Parallel()
	inj := &awstest.BatchEntryFailures{Fail: func(body string) bool { return strings.Contains(body, `"evt_poison"`) }, SenderFault: true}
	f := setup(t, inj.APIOption)
	id := f.event(t, "evt_poison")
	for round := 1; round <= 8; round++ {
		f.clock.Advance(time.Hour)
		if rep := f.run(t); rep.Rejected != 1 {
			t.Fatalf("round %d: %+v", round, rep)
		}
		rec := f.get(t, id)
		if rec.Reclaims != round || rec.Status != ledger.Received {
			t.Fatalf("round %d: %s, reclaims %d", round, rec.Status, rec.Reclaims)
		}
		// Refused, not lost: the queue stays idle, but the wait grows.
		if want := min(time.Minute<<(round-1), time.Hour); rec.DueAt.Sub(f.clock.Now()).Round(time.Second) != want {
			t.Fatalf("round %d: next look in %v, want %v", round, rec.DueAt.Sub(f.clock.Now()), want)
		}
	}
	f.clock.Advance(reclaimer.GiveUpAt(f.get(t, id)).Sub(f.clock.Now()))
	if rep := f.run(t); rep.Buried != 1 {
		t.Fatalf("a message the queue always refuses must end dead at its give-up time: %+v", rep)
	}
}

// slowLedger advances the fake clock on every shard query, so that a run's
// time budget passes after a known number of pages.
type slowLedger struct {
	*ledger.Ledger
	advance func()
}

func (s slowLedger) DueAfter(ctx context.Context, shard int, after, upTo time.Time, limit int, from ledger.DueCursor) ([]ledger.DueEntry, ledger.DueCursor, error) {
	s.advance()
	return s.Ledger.DueAfter(ctx, shard, after, upTo, limit, from)
}

type continuations struct {
	mu  sync.Mutex
	ins []reclaimer.Input
}

func (c *continuations) Continue(_ context.Context, in reclaimer.Input) error {
	c.mu.Lock()
	c.ins = append(c.ins, in)
	c.mu.Unlock()
	return nil
}

func TestRunStopsAtItsBudgetAndContinues(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ids := f.backlog(t, "evt_budget", 200)
	l := f.h.Ledger.(*ledger.Ledger)
	f.h.Ledger = slowLedger{Ledger: l, advance: func() { f.clock.Advance(time.Second) }}
	f.h.PerShard, f.h.Workers, f.h.Margin = 5, 2, 10*time.Second
	f.h.Lock = l
	cont := &continuations{}
	f.h.Continue = cont

	// 40 s of Lambda time, 10 s margin: 30 s of budget at one (fake) second
	// per page, fewer pages than the backlog needs (~44).
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	rep, err := f.h.Handle(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != reclaimer.StopBudget || !rep.Backlog || !rep.Continued || rep.Redriven() == 0 || rep.Redriven() >= len(ids) {
		t.Fatalf("a run whose budget runs out with a backlog: %+v", rep)
	}
	// 40 s deadline less 10 s margin = 30 s of budget, 1 s per page: 30
	// pages, plus at most one in flight per worker when the budget ran out.
	if rep.Pages < 30 || rep.Pages > 32 {
		t.Errorf("%d pages in a 30-page budget", rep.Pages)
	}
	if len(cont.ins) != 1 || cont.ins[0].Chain != 1 || cont.ins[0].Lock == "" {
		t.Fatalf("continuations %+v, want one with chain 1 and the run lock", cont.ins)
	}
	// A schedule tick meanwhile finds the lock held by the chain.
	if tick, err := f.h.Handle(context.Background(), nil); err != nil || tick.Stopped != reclaimer.StopLocked || tick.Scanned != 0 {
		t.Fatalf("a tick during the chain: %+v %v", tick, err)
	}
	// The continuation (as Lambda delivers it: JSON) takes the lock over,
	// finishes the job and, drained, starts no other and lets the lock go.
	payload, _ := json.Marshal(cont.ins[0])
	rest, err := f.h.Handle(context.Background(), json.RawMessage(payload))
	if err != nil {
		t.Fatal(err)
	}
	if rest.Stopped != reclaimer.StopDrained || rest.Backlog || rest.Continued || rest.Chain != 1 {
		t.Fatalf("continuation: %+v", rest)
	}
	if rep.Redriven()+rest.Redriven() != len(ids) {
		t.Fatalf("%d + %d re-driven of %d", rep.Redriven(), rest.Redriven(), len(ids))
	}
	if got := f.drainAll(t); len(got.count) != len(ids) {
		t.Fatalf("%d keys on the queue, want %d", len(got.count), len(ids))
	}
	if len(cont.ins) != 1 {
		t.Fatalf("a drained run continued: %+v", cont.ins)
	}
	if next, err := f.h.Handle(context.Background(), nil); err != nil || next.Stopped != reclaimer.StopDrained {
		t.Fatalf("the run after the chain: %+v %v (lock not released?)", next, err)
	}
}

func TestRunLockMakesOverlappingRunsTakeTurns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.Lock = f.h.Ledger.(*ledger.Ledger)
	f.h.PerShard = 7
	ids := f.backlog(t, "evt_turns", 150)
	var wg sync.WaitGroup
	reps := make([]reclaimer.Report, 5)
	for i := range reps {
		wg.Go(func() { reps[i], _ = f.h.Handle(context.Background(), nil) })
	}
	wg.Wait()
	locked, redriven, conflicts := 0, 0, 0
	for _, r := range reps {
		if r.Stopped == reclaimer.StopLocked {
			locked++
		}
		redriven += r.Redriven()
		conflicts += r.Conflicts
	}
	if locked == 0 || redriven != len(ids) || conflicts != 0 {
		t.Fatalf("5 overlapping runs with the lock: %d locked out, %d re-driven, %d conflicts (%+v)", locked, redriven, conflicts, reps)
	}
	got := f.drainAll(t)
	for _, id := range ids {
		if got.count[id.ID] != 1 {
			t.Errorf("%s enqueued %d times", id.ID, got.count[id.ID])
		}
	}
}

func TestContinuationsAreBounded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.backlog(t, "evt_chain", 120)
	l := f.h.Ledger.(*ledger.Ledger)
	f.h.Ledger = slowLedger{Ledger: l, advance: func() { f.clock.Advance(time.Second) }}
	f.h.PerShard, f.h.Workers, f.h.MaxChain = 5, 1, 3
	cont := &continuations{}
	f.h.Continue = cont
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := f.h.Handle(ctx, reclaimer.Input{Chain: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != reclaimer.StopBudget || !rep.Backlog || rep.Continued || len(cont.ins) != 0 {
		t.Fatalf("the last run of a chain of 3 continued: %+v %+v", rep, cont.ins)
	}
}

func TestPacingKeepsNewEventsFlowingDuringADrain(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const maxQueue = 20
	f.h.PerShard, f.h.MaxQueue = 5, maxQueue
	ids := f.backlog(t, "evt_backlog", 200)
	snd := &queue.Sender{API: f.sqs, URL: f.queue}

	c := newConsumed()
	stop := make(chan struct{})
	done := make(chan struct{})
	var fresh []string // new events, as the receiver enqueues them during the drain
	var aheadAtSend []int
	go func() {
		defer close(done)
		time.Sleep(300 * time.Millisecond) // the queue fills to the cap first
		// A processor taking 5 messages every 30 ms; every 40 messages a new
		// event arrives.
		for i := 0; ; i++ {
			c.mu.Lock()
			n := len(c.order)
			c.mu.Unlock()
			if n >= 40*(len(fresh)+1) && len(fresh) < 4 {
				key := fmt.Sprintf("evt_new_%d", len(fresh))
				if err := snd.Send(context.Background(), queue.Message{Source: "stripe", Tenant: "quiet", ID: key}); err != nil {
					t.Error(err)
				}
				fresh = append(fresh, key)
				aheadAtSend = append(aheadAtSend, n)
			}
			out, err := f.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &f.queue,
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
			if err == nil {
				var vis int
				fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &vis)
				c.mu.Lock()
				c.maxVis = max(c.maxVis, vis)
				c.mu.Unlock()
			}
			select {
			case <-stop:
				f.consume(t, c, 0, stop)
				return
			default:
			}
			out2, err := f.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &f.queue, MaxNumberOfMessages: 5, VisibilityTimeout: consumeVisibility})
			if err != nil {
				t.Error(err)
				return
			}
			c.mu.Lock()
			for _, m := range out2.Messages {
				msg, _ := queue.Decode(aws.ToString(m.Body))
				c.count[msg.ID]++
				c.order = append(c.order, msg.ID)
				f.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &f.queue, ReceiptHandle: m.ReceiptHandle})
			}
			c.mu.Unlock()
			time.Sleep(30 * time.Millisecond)
		}
	}()
	rep, err := f.h.Handle(context.Background(), nil)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if rep.Redriven() != len(ids) || rep.Stopped != reclaimer.StopDrained {
		t.Fatalf("report %+v", rep)
	}
	if rep.PacedMS == 0 {
		t.Errorf("the run never waited for the queue: %+v", rep)
	}
	for _, id := range ids {
		if c.count[id.ID] != 1 {
			t.Errorf("%s consumed %d times", id.ID, c.count[id.ID])
		}
	}
	// A new event waits behind at most the cap of re-driven messages (and
	// the new events sent before it).
	for i, key := range fresh {
		pos := -1
		for j, k := range c.order {
			if k == key {
				pos = j
				break
			}
		}
		if pos < 0 {
			t.Errorf("%s never consumed", key)
			continue
		}
		if ahead := pos - aheadAtSend[i]; ahead > maxQueue+len(fresh) {
			t.Errorf("%s waited behind %d messages; the cap is %d", key, ahead, maxQueue)
		} else {
			t.Logf("%s waited behind %d messages (cap %d)", key, ahead, maxQueue)
		}
	}
	if c.maxVis > maxQueue+len(fresh) { // the receiver's new events come on top of the cap
		t.Errorf("the queue held %d messages; the cap is %d", c.maxVis, maxQueue)
	}
	t.Logf("deepest queue seen %d, paced %d ms, %+v", c.maxVis, rep.PacedMS, rep)
}

func TestQueueDownLeavesTheBacklogUntouched(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ids := f.backlog(t, "evt_sqs_down", 20)
	f.h.Queue = &queue.BatchSender{API: f.sqs, URL: f.queue + "-gone"}
	rep, err := f.h.Handle(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != reclaimer.StopQueueDown || rep.Redriven() != 0 || rep.Scanned != 0 || !rep.Backlog {
		t.Fatalf("report %+v", rep)
	}
	for _, id := range ids {
		if rec := f.get(t, id); rec.Reclaims != 0 || rec.Version != 1 {
			t.Fatalf("%s was touched while the queue was down: %+v", id.ID, rec)
		}
	}
}

func TestFullQueueHoldsTheRunUntilItsBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ids := f.backlog(t, "evt_full", 60)
	t0 := time.Now()
	f.h.Now = func() time.Time { return f.clock.Now().Add(time.Since(t0)) } // the test's time, running
	f.h.PerShard, f.h.MaxQueue = 5, 10
	cont := &continuations{}
	f.h.Continue = cont
	// Nobody consumes: after two pages the queue is at its cap and stays there.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second) // budget 3 s (margin a quarter)
	defer cancel()
	start := time.Now()
	rep, err := f.h.Handle(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if rep.Stopped != reclaimer.StopPaced || !rep.Backlog || rep.Redriven() != 10 || rep.PacedMS == 0 {
		t.Fatalf("report %+v", rep)
	}
	if took < 2500*time.Millisecond || took > 3900*time.Millisecond {
		t.Errorf("the run took %v; its budget was 3 s of a 4 s deadline", took)
	}
	// It did put messages on the queue: the processor is alive, so the
	// backlog is worth a continuation.
	if !rep.Continued || len(cont.ins) != 1 {
		t.Errorf("continuations %+v", cont.ins)
	}
	if got := f.drainAll(t); len(got.count) != 10 {
		t.Errorf("%d messages queued, the cap is 10", len(got.count))
	}
	left := 0
	for _, id := range ids {
		if f.get(t, id).Reclaims == 0 {
			left++
		}
	}
	if left != len(ids)-10 {
		t.Errorf("%d records untouched, want %d", left, len(ids)-10)
	}
}

func TestContinuationChainCannotBeLengthenedByHand(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rep, err := f.h.Handle(t.Context(), json.RawMessage(`{"hookledger_reclaim_chain":-50}`))
	if err != nil || rep.Chain != 0 {
		t.Fatalf("chain %d, %v", rep.Chain, err)
	}
	rep, err = f.h.Handle(t.Context(), json.RawMessage(`{"version":"0","detail-type":"Scheduled Event","source":"aws.events"}`))
	if err != nil || rep.Chain != 0 || rep.Stopped != reclaimer.StopDrained {
		t.Fatalf("the schedule's event: %+v %v", rep, err)
	}
}
