package reclaimer_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

type fixture struct {
	l     *ledger.Ledger
	h     *reclaimer.Handler
	clock *fakeclock.Clock
	sqs   *sqs.Client
	queue string
	meter *awstest.Meter // the reclaimer's calls
}

// setup makes a ledger (4 shards) and a queue in the emulator and a
// reclaimer on them; opts are SDK options for the reclaimer's clients
// (fault injection, a meter).
func setup(t *testing.T, opts ...func(*middleware.Stack) error) *fixture {
	t.Helper()
	cfg := awstest.Config(t)
	c := fakeclock.New(time.Now().UTC())
	table := awstest.Table(t, cfg)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table, Shards: 4, ReclaimAfter: time.Minute, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	sq := sqs.NewFromConfig(cfg)
	m := awstest.NewMeter()
	hcfg := awstest.Config(t, append(opts, m.APIOption)...)
	hl, err := ledger.New(dynamodb.NewFromConfig(hcfg), ledger.Options{Table: table, Shards: 4, ReclaimAfter: time.Minute, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := &reclaimer.Handler{Ledger: hl, Queue: &queue.BatchSender{API: sqs.NewFromConfig(hcfg), URL: qurl}, Now: c.Now}
	return &fixture{l: l, h: h, clock: c, sqs: sq, queue: qurl, meter: m}
}

func (f *fixture) event(t *testing.T, key string) ledger.Key {
	t.Helper()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := f.l.PutPayload(t.Context(), id, []byte(`{"id":"`+key+`"}`), "x"); err != nil {
		t.Fatal(err)
	}
	return id
}

// drain takes the messages off the queue and returns their keys.
func (f *fixture) drain(t *testing.T) []string {
	t.Helper()
	var keys []string
	for _, b := range awstest.Drain(t, f.sqs, f.queue) {
		msg, err := queue.Decode(b)
		if err != nil {
			t.Fatalf("reclaimer sent an unreadable message: %v", err)
		}
		if string(msg.Body) != `{"id":"`+msg.ID+`"}` {
			t.Errorf("message for %s carries body %q", msg.ID, msg.Body)
		}
		keys = append(keys, msg.ID)
	}
	return f.explainRepeats(t, keys)
}

// explainRepeats drops a key's repeats when the reclaimer's SDK retried a
// send: the emulator sometimes cuts a SendMessageBatch answer short after
// queueing the batch, and the SDK sends it again (SQS is at least once;
// the ledger absorbs the copy). Without a retried send a repeat stays, and
// the caller's count catches a real double enqueue.
func (f *fixture) explainRepeats(t *testing.T, keys []string) []string {
	t.Helper()
	r := f.meter.Retries()
	if r["SQS.SendMessageBatch"]+r["SQS.SendMessage"] == 0 {
		return keys
	}
	seen := map[string]bool{}
	out := keys[:0:0]
	for _, k := range keys {
		if seen[k] {
			t.Logf("%s queued again by a retried send (%v); counted once", k, r)
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	return out
}

func (f *fixture) run(t *testing.T) reclaimer.Report {
	t.Helper()
	rep, err := f.h.Handle(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func (f *fixture) get(t *testing.T, id ledger.Key) ledger.Record {
	t.Helper()
	r, err := f.l.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOverdueReceivedIsRequeued(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.event(t, "evt_lost_message")
	if rep := f.run(t); rep.Scanned != 0 {
		t.Fatalf("not yet due, but scanned %+v", rep)
	}
	f.clock.Advance(time.Minute)
	if rep := f.run(t); rep.Requeued != 1 {
		t.Fatalf("report %+v", rep)
	}
	if keys := f.drain(t); len(keys) != 1 || keys[0] != id.ID {
		t.Fatalf("queue %v", keys)
	}
	rec := f.get(t, id)
	if rec.Reclaims != 1 || !rec.DueAt.After(f.clock.Now()) || rec.Status != ledger.Received {
		t.Fatalf("record %+v", rec)
	}
	// Not due again until the backoff passes.
	if rep := f.run(t); rep.Requeued != 0 {
		t.Fatalf("requeued again at once: %+v", rep)
	}
}

func TestExpiredLeaseIsResetAndRequeued(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.event(t, "evt_crashed_worker")
	if _, err := f.l.Claim(t.Context(), id, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	if rep := f.run(t); rep.Postponed != 1 || rep.Reset != 0 {
		t.Fatalf("live lease: %+v", rep)
	}
	if keys := f.drain(t); len(keys) != 0 {
		t.Fatalf("a live lease was re-enqueued: %v", keys)
	}
	f.clock.Advance(time.Minute) // lease over, grace over
	if rep := f.run(t); rep.Reset != 1 {
		t.Fatalf("expired lease: %+v", rep)
	}
	if keys := f.drain(t); len(keys) != 1 {
		t.Fatalf("queue %v", keys)
	}
	if rec := f.get(t, id); rec.Status != ledger.Received || rec.LeaseOwner != "" || rec.Reclaims != 1 {
		t.Fatalf("record %+v", rec)
	}
}

func TestResetKeepsRecordedSteps(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.event(t, "evt_charged_then_crashed")
	lease, err := f.l.Claim(t.Context(), id, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.SaveSteps(t.Context(), lease, ledger.StepChange{Name: "charge", Status: ledger.StepDone, Result: "ch_1"},
		ledger.StepChange{Name: "notify", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute) // the worker died mid-"notify"
	if rep := f.run(t); rep.Reset != 1 {
		t.Fatalf("report %+v", rep)
	}
	if keys := f.drain(t); len(keys) != 1 {
		t.Fatalf("queue %v", keys)
	}
	// The retry sees how far the dead worker got: the charge is not
	// repeated, and the started notification is for its check to settle.
	next, err := f.l.Claim(t.Context(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if st := next.Record.Steps; st["charge"].Status != ledger.StepDone || st["charge"].Result != "ch_1" || st["notify"].Status != ledger.StepStarted {
		t.Fatalf("steps after reset %+v", st)
	}
}

// TestFailedUnderAKeptLeaseWaitsForIt: a failed record that kept its lease's
// end (a step left started; see ledger.Fail) is not re-driven before that
// end: the reclaimer postpones it without counting a reclaim, as it does a
// live processing lease, and re-drives it after.
func TestFailedUnderAKeptLeaseWaitsForIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.event(t, "evt_notify_timed_out")
	lease, err := f.l.Claim(t.Context(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.SaveSteps(t.Context(), lease, ledger.StepChange{Name: "notify", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	// Extended to 5 minutes, but failed with the claim's lease value: its
	// due time comes before the lease the record keeps.
	if _, err := f.l.Extend(t.Context(), lease, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Fail(t.Context(), lease, "notify: request timed out", 0); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute)
	if rep := f.run(t); rep.Postponed != 1 || rep.Requeued != 0 {
		t.Fatalf("kept lease still live: %+v", rep)
	}
	if keys := f.drain(t); len(keys) != 0 {
		t.Fatalf("re-driven under a live kept lease: %v", keys)
	}
	if rec := f.get(t, id); rec.Status != ledger.Failed || rec.Reclaims != 0 {
		t.Fatalf("record %+v", rec)
	}
	f.clock.Advance(4 * time.Minute) // lease over, grace over
	if rep := f.run(t); rep.Requeued != 1 {
		t.Fatalf("after the kept lease: %+v", rep)
	}
	if keys := f.drain(t); len(keys) != 1 {
		t.Fatalf("queue %v", keys)
	}
	if _, err := f.l.Claim(t.Context(), id, time.Minute); err != nil {
		t.Fatalf("claim after the kept lease: %v", err)
	}
}

// TestRedrivenUntilItsGiveUpTime: a record that keeps coming back overdue
// (its message lost, again and again) is re-driven far more often than the
// five reclaims that used to bury it, backing off up to an hour, until its
// give-up time a day before it expires; then it is dead, out of the due
// index, with a cause that says why.
func TestRedrivenUntilItsGiveUpTime(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.event(t, "evt_never_arrives")
	created := f.get(t, id)
	giveUp := created.ExpiresAt.Add(-reclaimer.ExpiryMargin)
	if got := reclaimer.GiveUpAt(created); !got.Equal(giveUp) {
		t.Fatalf("give-up time %v, want a day before the expiry %v", got, created.ExpiresAt)
	}
	var rec ledger.Record
	for f.clock.Now().Before(giveUp) {
		f.clock.Advance(time.Hour)
		f.run(t)
		if rec = f.get(t, id); rec.Status.Terminal() && f.clock.Now().Before(giveUp) {
			t.Fatalf("%s after %d reclaims, %v before its give-up time: %s", rec.Status, rec.Reclaims, giveUp.Sub(f.clock.Now()), rec.LastError)
		}
	}
	if rec.Status != ledger.Dead || !rec.DueAt.IsZero() {
		t.Fatalf("at its give-up time: %s, due %v", rec.Status, rec.DueAt)
	}
	if rec.Reclaims < 100 {
		t.Errorf("re-driven %d times in 6 days; want about one an hour", rec.Reclaims)
	}
	for _, want := range []string{"gave up", "24h before the record expires", "reclaims", "hookledger replay --source stripe --tenant acme --id evt_never_arrives"} {
		if !strings.Contains(rec.LastError, want) {
			t.Errorf("cause %q does not say %q", rec.LastError, want)
		}
	}
	f.clock.Advance(time.Hour)
	if rep := f.run(t); rep.Scanned != 0 {
		t.Fatalf("dead record still in the due index: %+v", rep)
	}
}

func TestConcurrentReclaimersActOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, k := range []string{"evt_a", "evt_b", "evt_c"} {
		f.event(t, k)
	}
	f.clock.Advance(time.Minute)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { f.h.Handle(context.Background(), nil) })
	}
	wg.Wait()
	keys := f.drain(t)
	if len(keys) != 3 {
		t.Fatalf("4 concurrent reclaimers enqueued %d messages for 3 records: %v", len(keys), keys)
	}
}
