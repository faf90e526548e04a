package units_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
)

// The reclaimer's reads in units, against the emulator.

type reclaim struct {
	l     *ledger.Ledger
	h     *reclaimer.Handler
	clock *fakeclock.Clock
	sqs   *sqs.Client
	queue string
	meter *awstest.Meter // the reclaimer's calls
}

// setupReclaim makes a ledger (4 shards) and a queue in the emulator and a
// reclaimer on them; opts are SDK options for the reclaimer's clients.
func setupReclaim(t *testing.T, opts ...func(*middleware.Stack) error) *reclaim {
	t.Helper()
	cfg := awstest.Config(t)
	c := fakeclock.New(time.Now().UTC())
	table := awstest.Table(t, cfg)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table, Shards: 4, ReclaimAfter: time.Minute, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	m := awstest.NewMeter()
	hcfg := awstest.Config(t, append(opts, m.APIOption)...)
	hl, err := ledger.New(dynamodb.NewFromConfig(hcfg), ledger.Options{Table: table, Shards: 4, ReclaimAfter: time.Minute, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := &reclaimer.Handler{Ledger: hl, Queue: &queue.BatchSender{API: sqs.NewFromConfig(hcfg), URL: qurl}, Now: c.Now}
	return &reclaim{l: l, h: h, clock: c, sqs: sqs.NewFromConfig(cfg), queue: qurl, meter: m}
}

// event creates an event with its payload, as the receiver does.
func (f *reclaim) event(t *testing.T, key string) ledger.Key {
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

// done creates an event and completes it, as the processor does.
func (f *reclaim) done(t *testing.T, key string) ledger.Key {
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

func (f *reclaim) run(t *testing.T) reclaimer.Report {
	t.Helper()
	rep, err := f.h.Handle(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// drain takes the messages off the queue and returns their keys, each once
// when the reclaimer's SDK retried a send (the emulator sometimes cuts a
// SendMessageBatch answer short after queueing the batch).
func (f *reclaim) drain(t *testing.T) []string {
	t.Helper()
	retried := f.meter.Retries()["SQS.SendMessageBatch"] > 0
	var keys []string
	seen := map[string]bool{}
	for _, b := range awstest.Drain(t, f.sqs, f.queue) {
		msg, err := queue.Decode(b)
		if err != nil {
			t.Fatalf("reclaimer sent an unreadable message: %v", err)
		}
		if string(msg.Body) != `{"id":"`+msg.ID+`"}` {
			t.Errorf("message for %s carries body %q", msg.ID, msg.Body)
		}
		if retried && seen[msg.ID] {
			continue
		}
		seen[msg.ID] = true
		keys = append(keys, msg.ID)
	}
	return keys
}

// setupCounted is setup with the unit accountant on the reclaimer's calls
// and the run lock (which keeps the marks) on the ledger.
func setupCounted(t *testing.T) (*reclaim, *units.Accountant, *ledger.Ledger) {
	t.Helper()
	acc := &units.Accountant{Tables: map[string]units.TableSpec{}}
	f := setupReclaim(t, acc.APIOption)
	l := f.h.Ledger.(*ledger.Ledger)
	acc.Raw, acc.Tables[l.Table()] = dynamodb.NewFromConfig(awstest.Config(t)), ledgerSpec
	f.h.Lock = l
	return f, acc, l
}

// A done record keeps its due-index entry (the exit write is gone from the
// happy path); the reclaimer reads it once, when it falls due, with an
// eventually consistent read (half a read unit), passes it, and moves its
// mark past it: later runs do not read it again.
func TestDoneRecordsAreReadOnceAtHalfAReadUnit(t *testing.T) {
	t.Parallel()
	f, acc, _ := setupCounted(t)
	f.h.Lag = 10 * time.Second
	const n = 12
	for i := range n {
		f.done(t, "evt_done_"+string(rune('a'+i)))
	}
	f.clock.Advance(time.Minute + 30*time.Second) // due 30 s ago: past the lag
	acc.Take()
	first := f.run(t)
	if first.Scanned != n || first.Skipped != n || first.Redriven() != 0 || first.Marked == 0 {
		t.Fatalf("first run over %d done records: %+v", n, first)
	}
	u := acc.Take()
	// n records at half a unit, the shard queries (half a unit each, 4
	// shards), no consistent record reads.
	if want := float64(n)/2 + 4*0.5; u.RCU > want {
		t.Errorf("the run read %v RCU, want at most %v (done records passed on eventually consistent reads)", u.RCU, want)
	}
	for range 3 {
		f.clock.Advance(time.Minute)
		if rep := f.run(t); rep.Scanned != 0 {
			t.Fatalf("a later run read the done records again: %+v", rep)
		}
	}
}

// The mark trails each run by the lag, so the next run reads again the
// entries that fell due in that stretch. When it runs in the same process (a
// warm container), the done records among them cost no second read: it
// passes them on the run before's word (Known), while an event that came in
// since is read and re-driven as ever. A handler without that memory (a
// cold container) reads them again.
func TestEntriesReadAgainCostNoSecondReadInAWarmProcess(t *testing.T) {
	t.Parallel()
	f, acc, l := setupCounted(t) // the default lag: a minute
	const n = 12
	for i := range n {
		f.done(t, "evt_warm_"+string(rune('a'+i)))
	}
	f.clock.Advance(time.Minute + 20*time.Second) // due 20 s ago: within the lag
	first := f.run(t)
	if first.Scanned != n || first.Skipped != n || first.Known != 0 || first.Redriven() != 0 {
		t.Fatalf("first run over %d done records: %+v", n, first)
	}
	cold := *f
	cold.h = &reclaimer.Handler{Ledger: f.h.Ledger, Queue: f.h.Queue, Lock: l, Now: f.clock.Now}
	f.clock.Advance(time.Second)
	if rep := cold.run(t); rep.Scanned != n || rep.Known != 0 {
		t.Fatalf("a run in a fresh process: %+v; want the %d done entries read again", rep, n)
	}
	lost := f.event(t, "evt_warm_lost") // its message never reaches the queue
	f.clock.Advance(time.Minute + time.Second)
	acc.Take()
	second := f.run(t)
	if second.Scanned != n+1 || second.Known != n || second.Requeued != 1 {
		t.Fatalf("the next run in the first process: %+v; want the %d done entries known and the new event re-driven", second, n)
	}
	if got := f.drain(t); len(got) != 1 || got[0] != lost.ID {
		t.Fatalf("queue %v, want %s", got, lost.ID)
	}
	// The shard queries (half a unit each, 4 shards), the new record's peek
	// (half), its consistent read and its payload's (a unit each): nothing
	// for the known entries, which would add n halves.
	if u, want := acc.Take(), 4*0.5+0.5+1+1; u.RCU > want {
		t.Errorf("the run read %v RCU, want at most %v: known entries were read again", u.RCU, want)
	}
}

// ledgerSpec is the ledger table's shape for the unit accountant.
var ledgerSpec = units.LedgerTable
