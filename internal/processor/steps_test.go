package processor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// downstream is a fake downstream API for the step tests: it records each
// effect by its idempotency key and counts how often each happened.
type downstream struct {
	mu      sync.Mutex
	effects map[string]int // step name/key -> times performed
	block   chan struct{}  // when set, the "slow" step waits on it
}

func (d *downstream) do(name, key string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.effects[name+"/"+key]++
	return name + "-result"
}

func (d *downstream) times(name, key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.effects[name+"/"+key]
}

// check is a step check backed by the fake downstream.
func (d *downstream) check(name string) hookledger.CheckFunc {
	return func(ctx context.Context, key string) (string, error) {
		if d.times(name, key) > 0 {
			return name + "-result", nil
		}
		return "", fmt.Errorf("no %s: %w", name, hookledger.ErrNotDone)
	}
}

type stepFixture struct {
	l     *ledger.Ledger
	db    *dynamodb.Client // the ledger's table, for records as older code left them
	h     *processor.Handler
	r     *hookledger.Router // the processor's routes: tests may add more
	clock *fakeclock.Clock
	down  *downstream
	meter *awstest.Meter
	crash string // the crash point armed for the next run ("" none)
	mu    sync.Mutex
}

// setupSteps builds a processor whose crash points stop the run dead
// (runtime.Goexit: nothing after the point runs, as in a killed process),
// on a ledger with an injected clock, with these handlers:
//
//	stripe/three:  a (at-least-once, checked), b (at-most-once, checked), c (at-least-once)
//	stripe/one:    a single at-least-once step
//	stripe/two:    two at-least-once steps
//	stripe/blind:  one at-most-once step without a check
//	stripe/slow:   step a, then waits on down.block, then step b
func setupSteps(t *testing.T) *stepFixture {
	t.Helper()
	m := awstest.NewMeter()
	cfg := awstest.Config(t, m.APIOption)
	c := fakeclock.New(time.Now().UTC())
	db := dynamodb.NewFromConfig(cfg)
	l, err := ledger.New(db, ledger.Options{Table: awstest.Table(t, cfg), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	f := &stepFixture{l: l, db: db, clock: c, down: &downstream{effects: map[string]int{}}, meter: m}
	d := f.down
	step := func(name string) func(ctx context.Context, key string) (string, error) {
		return func(ctx context.Context, key string) (string, error) { return d.do(name, key), nil }
	}
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "three", func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "a", step("a"), hookledger.Check(d.check("a"))); err != nil {
			return err
		}
		if _, err := ev.Step(ctx, "b", step("b"), hookledger.AtMostOnce(), hookledger.Check(d.check("b"))); err != nil {
			return err
		}
		_, err := ev.Step(ctx, "c", step("c"))
		return err
	})
	r.HandleFunc("stripe", "one", func(ctx context.Context, ev *hookledger.Event) error {
		_, err := ev.Step(ctx, "a", step("a"))
		return err
	})
	r.HandleFunc("stripe", "two", func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "a", step("a")); err != nil {
			return err
		}
		_, err := ev.Step(ctx, "b", step("b"))
		return err
	})
	r.HandleFunc("stripe", "blind", func(ctx context.Context, ev *hookledger.Event) error {
		_, err := ev.Step(ctx, "x", step("x"), hookledger.AtMostOnce())
		return err
	})
	r.HandleFunc("stripe", "slow", func(ctx context.Context, ev *hookledger.Event) error {
		if _, err := ev.Step(ctx, "a", step("a"), hookledger.Check(d.check("a"))); err != nil {
			return err
		}
		d.mu.Lock()
		block := d.block
		d.mu.Unlock()
		if block != nil {
			<-block
		}
		_, err := ev.Step(ctx, "b", step("b"), hookledger.AtMostOnce(), hookledger.Check(d.check("b")))
		return err
	})
	f.r = r
	f.h = &processor.Handler{Ledger: l, Routes: engine.MustRoutes(r), Lease: time.Minute, MaxAttempts: 5, Now: c.Now,
		Point: func(p string) {
			f.mu.Lock()
			hit := p == f.crash
			if hit {
				f.crash = "" // one crash per arming, like a process that dies once
			}
			f.mu.Unlock()
			if hit {
				runtime.Goexit()
			}
		}}
	return f
}

func (f *stepFixture) message(t *testing.T, key, typ string) events.SQSMessage {
	t.Helper()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: typ, BodySHA256: "x"}); err != nil {
		t.Fatal(err)
	}
	body, err := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: key, Type: typ, SHA256: "x", Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: "m-" + key, Body: body}
}

func (f *stepFixture) deliver(t *testing.T, msg events.SQSMessage) bool {
	t.Helper()
	resp, err := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.BatchItemFailures) == 0
}

func (f *stepFixture) record(t *testing.T, key string) ledger.Record {
	t.Helper()
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: key})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func key(k, step string) string { return engine.DownstreamKey("stripe", "acme", k, step) }

// TestCrashAtEveryStepPointResumes kills the run at each crash point of a
// three-step handler (inside and between steps) and lets the retry, after
// the lease expired, finish the event. Steps a and b have checks, so their
// effects happen exactly once whatever the crash; c is at-least-once
// without a check, so a crash after it ran and before its completion was
// recorded repeats it once, with the same downstream key. No step recorded
// done runs again.
func TestCrashAtEveryStepPointResumes(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"processor.after_claim", "step.a.ran", "step.b.started", "step.b.ran", "step.c.ran", "processor.after_effect", "processor.after_complete"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			f := setupSteps(t)
			k := "evt_crash_" + strings.ReplaceAll(point, ".", "_")
			msg := f.message(t, k, "three")
			f.crash = point
			if f.deliver(t, msg) {
				t.Fatal("the crashed run acknowledged its message")
			}
			if f.crash != "" {
				t.Fatalf("crash point %s never hit", point)
			}
			f.clock.Advance(2 * time.Minute) // the dead worker's lease runs out
			if !f.deliver(t, msg) {
				t.Fatalf("the retry failed: %+v", f.record(t, k))
			}
			rec := f.record(t, k)
			wantAttempts := 2
			if point == "processor.after_complete" {
				wantAttempts = 1 // the crash came after the record was done: the retry found it done
			}
			if rec.Status != ledger.Done || rec.Attempts != wantAttempts {
				t.Fatalf("record after the retry: %+v", rec)
			}
			for _, s := range []string{"a", "b", "c"} {
				want := 1
				if s == "c" && (point == "step.c.ran" || point == "processor.after_effect") {
					want = 2 // at-least-once: ran, crashed before being recorded, ran again
				}
				if n := f.down.times(s, key(k, s)); n != want {
					t.Errorf("effect %s happened %d times, want %d", s, n, want)
				}
				if st := rec.Steps[s]; st.Status != ledger.StepDone || st.Result != s+"-result" {
					t.Errorf("step %s recorded %+v", s, st)
				}
			}
		})
	}
}

// TestWritesPerStepCount pins what steps cost in ledger writes: a one-step
// event costs no more than an event without steps (claim, complete); each
// further step adds one UpdateItem.
func TestWritesPerStepCount(t *testing.T) {
	t.Parallel()
	f := setupSteps(t)
	for _, tc := range []struct {
		typ    string
		writes int
	}{{"one", 2}, {"two", 3}, {"three", 4}} {
		msg := f.message(t, "evt_cost_"+tc.typ, tc.typ)
		f.meter.Reset()
		if !f.deliver(t, msg) {
			t.Fatalf("%s failed", tc.typ)
		}
		if snap := f.meter.Snapshot(); snap["DynamoDB.UpdateItem"] != tc.writes || len(snap) != 1 {
			t.Errorf("%s-step event: %v, want %d UpdateItem and nothing else", tc.typ, snap, tc.writes)
		}
	}
}

// TestLeaseLostBetweenStepsStopsTheOldWorker: worker A runs step a and
// stalls; its lease expires and worker B takes the event over and finishes
// it; when A wakes, its next step write is refused, and A writes nothing
// more. Every effect happened once.
func TestLeaseLostBetweenStepsStopsTheOldWorker(t *testing.T) {
	t.Parallel()
	f := setupSteps(t)
	msg := f.message(t, "evt_takeover", "slow")
	f.down.mu.Lock()
	f.down.block = make(chan struct{})
	f.down.mu.Unlock()
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	aDone := make(chan bool)
	go func() { aDone <- f.deliver(t, msg) }()
	k := "evt_takeover"
	for f.down.times("a", key(k, "a")) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	f.clock.Advance(2 * time.Minute) // A's lease runs out while it stalls
	f.down.mu.Lock()
	block := f.down.block
	f.down.block = nil // B does not stall
	f.down.mu.Unlock()
	if !f.deliver(t, msg) {
		t.Fatalf("worker B failed: %+v", f.record(t, k))
	}
	close(block)
	if <-aDone {
		t.Error("worker A acknowledged the message after losing its lease")
	}
	rec := f.record(t, k)
	if rec.Status != ledger.Done || rec.Attempts != 2 {
		t.Fatalf("record %+v", rec)
	}
	for _, s := range []string{"a", "b"} {
		if n := f.down.times(s, key(k, s)); n != 1 {
			t.Errorf("effect %s happened %d times, want once", s, n)
		}
	}
	if !strings.Contains(emf.String(), `"Failed":1`) {
		t.Errorf("worker A's lost lease was not counted: %s", emf.String())
	}
}

// TestStartedStepWithoutCheckIsIndeterminate: an at-most-once step without
// a check, found started after a crash, is never run blindly: the event
// goes dead as indeterminate, counted, and an operator's replay that marks
// the step done finishes it without running the step.
func TestStartedStepWithoutCheckIsIndeterminate(t *testing.T) {
	t.Parallel()
	f := setupSteps(t)
	k := "evt_blind"
	msg := f.message(t, k, "blind")
	f.crash = "step.x.ran"
	f.deliver(t, msg)
	f.clock.Advance(2 * time.Minute)
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	if !f.deliver(t, msg) {
		t.Fatal("an indeterminate event is settled (dead), so its message is acknowledged")
	}
	rec := f.record(t, k)
	if rec.Status != ledger.Dead || !strings.HasPrefix(rec.LastError, "indeterminate step x:") {
		t.Fatalf("record %+v", rec)
	}
	if !strings.Contains(emf.String(), `"Indeterminate":1`) || !strings.Contains(emf.String(), `"Dead":1`) {
		t.Errorf("metrics %s", emf.String())
	}
	if n := f.down.times("x", key(k, "x")); n != 1 {
		t.Fatalf("step x ran %d times, want once (never blindly again)", n)
	}
	// The operator checked: it happened.
	if _, err := f.l.Replay(t.Context(), rec.Key, ledger.StepChange{Name: "x", Status: ledger.StepDone, Result: "checked by hand"}); err != nil {
		t.Fatal(err)
	}
	// The burial left step x started, so it kept the burying attempt's
	// lease end, and the replayed event is claimed only after it.
	f.clock.Advance(2 * time.Minute)
	if !f.deliver(t, msg) {
		t.Fatalf("replayed event failed: %+v", f.record(t, k))
	}
	if rec := f.record(t, k); rec.Status != ledger.Done || rec.Steps["x"].Result != "checked by hand" {
		t.Fatalf("after replay %+v", rec)
	}
	if n := f.down.times("x", key(k, "x")); n != 1 {
		t.Fatalf("step x ran %d times after the replay marked it done", n)
	}
}

// TestTimedOutStepWaitsForItsLease: an at-most-once step whose request
// timed out on our side fails the event, and the downstream applies the
// request only later. A copy of the message that arrives meanwhile (an SQS
// duplicate, a re-drive) finds the event busy and goes back to the queue
// instead of asking the check too early and sending the request again; the
// retry after the lease ended finds the effect through the check. It
// happened once.
func TestTimedOutStepWaitsForItsLease(t *testing.T) {
	t.Parallel()
	f := setupSteps(t)
	d := f.down
	var mu sync.Mutex
	calls := 0
	f.r.HandleFunc("stripe", "notify", func(ctx context.Context, ev *hookledger.Event) error {
		_, err := ev.Step(ctx, "n", func(ctx context.Context, key string) (string, error) {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				return "", fmt.Errorf("notify: %w", context.DeadlineExceeded) // the downstream has it, but not yet applied
			}
			return d.do("n", key), nil
		}, hookledger.AtMostOnce(), hookledger.Check(d.check("n")))
		return err
	})
	var logs bytes.Buffer
	f.h.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	k := "evt_timed_out"
	msg := f.message(t, k, "notify")
	if f.deliver(t, msg) {
		t.Fatal("the timed-out run acknowledged its message")
	}
	if rec := f.record(t, k); rec.Status != ledger.Failed || rec.Steps["n"].Status != ledger.StepStarted || rec.LeaseUntil.IsZero() {
		t.Fatalf("after the timeout: %+v, want failed, step n started, the lease's end kept", rec)
	}
	if f.deliver(t, msg) {
		t.Fatal("a duplicate during the lease acknowledged its message")
	}
	if !strings.Contains(logs.String(), `"outcome":"`+string(processor.LeasedElsewhere)+`"`) {
		t.Errorf("the duplicate's outcome is not %s: %s", processor.LeasedElsewhere, logs.String())
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	if n != 1 {
		t.Fatalf("step n ran %d times before the first request's lease ended, want once", n)
	}
	d.do("n", key(k, "n")) // the downstream applies the timed-out request
	f.clock.Advance(time.Minute)
	if !f.deliver(t, msg) {
		t.Fatalf("the retry after the lease failed: %+v", f.record(t, k))
	}
	if rec := f.record(t, k); rec.Status != ledger.Done || rec.Steps["n"].Result != "n-result" {
		t.Fatalf("after the retry: %+v", rec)
	}
	if n := d.times("n", key(k, "n")); n != 1 {
		t.Fatalf("effect n happened %d times, want once", n)
	}
}

// TestUnroutedFailBuries: with HOOKLEDGER_UNROUTED=fail an event no route
// matches goes dead, named in its cause.
func TestUnroutedFailBuries(t *testing.T) {
	t.Parallel()
	f := setupSteps(t)
	f.h.Unrouted = processor.UnroutedFail
	msg := f.message(t, "evt_nowhere", "customer.created")
	if !f.deliver(t, msg) {
		t.Fatal("not acknowledged")
	}
	if rec := f.record(t, "evt_nowhere"); rec.Status != ledger.Dead || !strings.Contains(rec.LastError, "no route") {
		t.Fatalf("record %+v", rec)
	}
}

// TestExtendLeaseLostStopsTheHandler: ExtendLease finds the lease gone
// (the worker stalled past it); a handler that ignores the error must not
// run another step, even one with nothing to write before it.
func TestExtendLeaseLostStopsTheHandler(t *testing.T) {
	t.Parallel()
	f := setupSteps(t)
	var extendErr error
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "stall", func(ctx context.Context, ev *hookledger.Event) error {
		f.clock.Advance(2 * time.Minute) // the lease (1 min) runs out while it stalls
		extendErr = ev.ExtendLease(ctx, time.Minute)
		_, err := ev.Step(ctx, "a", func(ctx context.Context, key string) (string, error) { return f.down.do("a", key), nil })
		return err
	})
	f.h.Routes = engine.MustRoutes(r)
	k := "evt_extend_lost"
	if f.deliver(t, f.message(t, k, "stall")) {
		t.Error("the message was acknowledged by a worker that lost its lease")
	}
	if !errors.Is(extendErr, hookledger.ErrLeaseLost) {
		t.Fatalf("ExtendLease: %v, want ErrLeaseLost", extendErr)
	}
	if n := f.down.times("a", key(k, "a")); n != 0 {
		t.Fatalf("step a ran %d times after ExtendLease reported the lease lost", n)
	}
	if rec := f.record(t, k); rec.Status != ledger.Processing || len(rec.Steps) != 0 {
		t.Fatalf("record %+v: the worker that lost its lease wrote", rec)
	}
}
