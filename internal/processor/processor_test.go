package processor_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/hookledger/hookledger/internal/engine"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookledger/hookledger"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

type fixture struct {
	l      *ledger.Ledger
	h      *processor.Handler
	r      *hookledger.Router // the processor's routes: tests may add more
	calls  sync.Map           // event key -> *atomic.Int32
	leases chan [2]time.Time  // the slow handler's lease before and after extending
	meter  *awstest.Meter
}

func setup(t *testing.T) *fixture {
	t.Helper()
	m := awstest.NewMeter()
	cfg := awstest.Config(t, m.APIOption)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: awstest.Table(t, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{l: l, leases: make(chan [2]time.Time, 1), meter: m}
	r := hookledger.NewRouter()
	count := func(ev *hookledger.Event) {
		c, _ := f.calls.LoadOrStore(ev.ID, new(atomic.Int32))
		c.(*atomic.Int32).Add(1)
	}
	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error { count(ev); return nil })
	r.HandleFunc("stripe", "flaky", func(ctx context.Context, ev *hookledger.Event) error {
		count(ev)
		return errors.New("downstream 503")
	})
	r.HandleFunc("stripe", "declined", func(ctx context.Context, ev *hookledger.Event) error {
		count(ev)
		return hookledger.Permanent(errors.New("card declined"))
	})
	r.HandleFunc("stripe", "slow", func(ctx context.Context, ev *hookledger.Event) error {
		count(ev)
		id := ledger.Key{Source: ev.Source, Tenant: ev.Tenant, ID: ev.ID}
		before, _ := l.Get(ctx, id)
		if err := ev.ExtendLease(ctx, 10*time.Minute); err != nil {
			return err
		}
		after, _ := l.Get(ctx, id)
		f.leases <- [2]time.Time{before.LeaseUntil, after.LeaseUntil}
		return nil
	})
	f.r = r
	f.h = &processor.Handler{Ledger: l, Routes: engine.MustRoutes(r), Lease: time.Minute, MaxAttempts: 3}
	return f
}

func (f *fixture) calledTimes(key string) int {
	if c, ok := f.calls.Load(key); ok {
		return int(c.(*atomic.Int32).Load())
	}
	return 0
}

// event creates a received record and returns its queue message.
// traceHeader is the trace header the receiver gave the fixture's events.
const traceHeader = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1"

// event records an event as the receiver does and returns its message, as
// the SQS event source hands it over.
func (f *fixture) event(t *testing.T, key, typ string) events.SQSMessage {
	t.Helper()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: typ, BodySHA256: "x", Trace: traceHeader}); err != nil {
		t.Fatal(err)
	}
	body, err := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: key, Type: typ, SHA256: "x", Body: []byte(`{"id":"` + key + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: "m-" + key, Body: body, Attributes: map[string]string{queue.TraceAttribute: traceHeader}}
}

func (f *fixture) status(t *testing.T, key string) ledger.Record {
	t.Helper()
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: key})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestMixedBatchReportsOnlyWhatFailed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	good := f.event(t, "evt_good", "invoice.paid")
	leased := f.event(t, "evt_leased", "invoice.paid")
	if _, err := f.l.Claim(ctx, ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_leased"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	done := f.event(t, "evt_done", "invoice.paid")
	lease, _ := f.l.Claim(ctx, ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_done"}, time.Minute)
	f.l.Complete(ctx, lease)
	flaky := f.event(t, "evt_flaky", "flaky")
	declined := f.event(t, "evt_declined", "declined")
	unrouted := f.event(t, "evt_unrouted", "customer.created")
	malformed := events.SQSMessage{MessageId: "m-malformed", Body: `{"v":1,"source":"stripe"`}

	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	resp, err := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{good, leased, done, flaky, declined, unrouted, malformed}})
	if err != nil {
		t.Fatal(err)
	}
	// The happy path counts nothing (Processed is no metric: the queue's
	// deletes count it); what needs a person also counts NeedsOperator.
	for name, want := range map[string]int{"Processed": 0, "Unrouted": 1, "Failed": 3, "Dead": 1, "NeedsOperator": 1, "Redelivered": 1} {
		if got := strings.Count(emf.String(), `"`+name+`":1`); got != want {
			t.Errorf("metric %s counted %d times, want %d", name, got, want)
		}
	}
	failed := map[string]bool{}
	for _, it := range resp.BatchItemFailures {
		failed[it.ItemIdentifier] = true
	}
	want := map[string]bool{"m-evt_leased": true, "m-evt_flaky": true, "m-malformed": true}
	if len(failed) != len(want) {
		t.Errorf("failures %v, want %v", failed, want)
	}
	for id := range want {
		if !failed[id] {
			t.Errorf("%s not reported as failed (got %v)", id, failed)
		}
	}
	for key, st := range map[string]ledger.Status{
		"evt_good": ledger.Done, "evt_leased": ledger.Processing, "evt_done": ledger.Done,
		"evt_flaky": ledger.Failed, "evt_declined": ledger.Dead, "evt_unrouted": ledger.Done,
	} {
		if got := f.status(t, key); got.Status != st {
			t.Errorf("%s: status %s, want %s", key, got.Status, st)
		}
	}
	if f.calledTimes("evt_good") != 1 || f.calledTimes("evt_leased") != 0 || f.calledTimes("evt_done") != 0 {
		t.Errorf("handler calls: good %d leased %d done %d", f.calledTimes("evt_good"), f.calledTimes("evt_leased"), f.calledTimes("evt_done"))
	}
	if rec := f.status(t, "evt_flaky"); rec.LastError != "downstream 503" || rec.Attempts != 1 {
		t.Errorf("flaky record %+v", rec)
	}
	if rec := f.status(t, "evt_declined"); rec.LastError != "permanent: card declined" {
		t.Errorf("declined record last_error %q", rec.LastError)
	}
}

func TestRedeliveryAfterDoneDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	f := setup(t)
	msg := f.event(t, "evt_twice", "invoice.paid")
	for range 3 {
		resp, _ := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}})
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("failures %v", resp.BatchItemFailures)
		}
	}
	if n := f.calledTimes("evt_twice"); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

func TestConcurrentRedeliveryRunsOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	msg := f.event(t, "evt_race", "invoice.paid")
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}}) })
	}
	wg.Wait()
	if n := f.calledTimes("evt_race"); n != 1 {
		t.Fatalf("handler ran %d times under 10 concurrent deliveries, want 1", n)
	}
}

func TestAttemptsExhaustedBuries(t *testing.T) {
	t.Parallel()
	f := setup(t)
	msg := f.event(t, "evt_exhaust", "flaky")
	for i := range 3 {
		resp, _ := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}})
		wantFail := i < 2
		if (len(resp.BatchItemFailures) == 1) != wantFail {
			t.Fatalf("attempt %d: failures %v", i+1, resp.BatchItemFailures)
		}
	}
	rec := f.status(t, "evt_exhaust")
	if rec.Status != ledger.Dead || rec.Attempts != 3 {
		t.Fatalf("after 3 attempts: %+v", rec)
	}
}

func TestLeaseFollowsInvocationDeadlineAndExtends(t *testing.T) {
	t.Parallel()
	f := setup(t)
	msg := f.event(t, "evt_slow", "slow")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	if f.calledTimes("evt_slow") != 1 {
		t.Fatal("slow handler did not run")
	}
	l := <-f.leases
	// Lease = remaining invocation time (20s) + margin (5s).
	if d := l[0].Sub(start); d < 24*time.Second || d > 26*time.Second {
		t.Errorf("lease ran %v past the start, want about 25s (deadline plus margin)", d)
	}
	if d := l[1].Sub(start); d < 9*time.Minute {
		t.Errorf("extended lease ends %v after start, want about 10m", d)
	}
	if rec := f.status(t, "evt_slow"); rec.Status != ledger.Done {
		t.Fatalf("%+v", rec)
	}
}

// TestExtendLeaseNeverShortensTheLease: with 14 minutes of invocation left
// the lease ends 14m05s out; "keep it 30 s more" must not move that end
// 13m35s earlier, where the reclaimer would reset the live worker's event.
func TestExtendLeaseNeverShortensTheLease(t *testing.T) {
	t.Parallel()
	f := setup(t)
	leases := make(chan [2]time.Time, 1)
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "long", func(ctx context.Context, ev *hookledger.Event) error {
		id := ledger.Key{Source: ev.Source, Tenant: ev.Tenant, ID: ev.ID}
		before, _ := f.l.Get(ctx, id)
		if err := ev.ExtendLease(ctx, 30*time.Second); err != nil {
			return err
		}
		after, _ := f.l.Get(ctx, id)
		leases <- [2]time.Time{before.LeaseUntil, after.LeaseUntil}
		return nil
	})
	f.h.Routes = engine.MustRoutes(r)
	msg := f.event(t, "evt_long", "long")
	ctx, cancel := context.WithTimeout(t.Context(), 14*time.Minute)
	defer cancel()
	if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	l := <-leases
	if l[1].Before(l[0]) {
		t.Fatalf("ExtendLease(30s) moved the lease's end %v earlier (from %v to %v)", l[0].Sub(l[1]), l[0], l[1])
	}
}

func TestPayloadReadFromLedgerWhenMessageHasNone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var got []byte
	r := hookledger.NewRouter()
	r.HandleFunc("*", "*", func(ctx context.Context, ev *hookledger.Event) error { got = ev.Body; return nil })
	f.h.Routes = engine.MustRoutes(r)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_big"}
	f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"})
	f.l.PutPayload(t.Context(), id, []byte(`{"big":true}`), "x")
	body, _ := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_big", Type: "invoice.paid", SHA256: "x", BodyOmitted: true})
	resp, _ := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: body}}})
	if len(resp.BatchItemFailures) != 0 || string(got) != `{"big":true}` {
		t.Fatalf("failures %v, body %q", resp.BatchItemFailures, got)
	}
}

func TestDownstreamKeysKeepTheirDerivation(t *testing.T) {
	t.Parallel()
	// Keys handed to downstream APIs must never change across releases: a
	// changed key turns a retried charge into a second charge. They are
	// SHA-256 over the ledger's partition key, a zero byte and the name.
	for _, id := range []ledger.Key{
		{Source: "stripe", Tenant: "acme", ID: "evt_1"},
		{Source: "gen", Tenant: "a#b", ID: "k%23#x"},
	} {
		sum := sha256.Sum256([]byte(id.PK() + "\x00charge"))
		want := "hl_" + hex.EncodeToString(sum[:])[:40]
		if got := engine.DownstreamKey(id.Source, id.Tenant, id.ID, "charge"); got != want {
			t.Errorf("%s: key %s, want %s", id, got, want)
		}
	}
}

func TestProcessedEventCostsTwoWritesNoReads(t *testing.T) {
	t.Parallel()
	f := setup(t)
	msg := f.event(t, "evt_cost", "invoice.paid")
	f.meter.Reset()
	resp, _ := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp.BatchItemFailures)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.UpdateItem"] != 2 || len(snap) != 1 {
		t.Fatalf("processing cost %v, want exactly 2 UpdateItem (claim, complete) and nothing else", snap)
	}
}

func TestNoFailuresIsAnEmptyList(t *testing.T) {
	t.Parallel()
	h := &processor.Handler{Routes: engine.MustRoutes(hookledger.NewRouter())}
	resp, err := h.Handle(t.Context(), events.SQSEvent{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(resp)
	if string(b) != `{"batchItemFailures":[]}` {
		t.Fatalf("response %s; an empty list, not null, is what every event source mapping accepts", b)
	}
}
