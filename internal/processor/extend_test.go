package processor_test

import (
	"context"
	"github.com/hookledger/hookledger/internal/engine"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// extendLedger records each Extend's new end in the order the writes land;
// the short extension's write is slow, as a write can be.
type extendLedger struct {
	mu   sync.Mutex
	ends []time.Time
}

func (x *extendLedger) ClaimEvent(_ context.Context, id ledger.Key, d time.Duration, ev ledger.Identity) (ledger.Lease, error) {
	until := time.Now().Add(d)
	return ledger.Lease{ID: id, Token: "t", Until: until, Record: ledger.Record{Key: id, EventType: ev.Type, BodySHA256: ev.BodySHA256,
		Status: ledger.Processing, Attempts: 1, Version: 2, LeaseUntil: until}}, nil
}

func (x *extendLedger) Extend(_ context.Context, l ledger.Lease, d time.Duration) (ledger.Lease, error) {
	until := time.Now().Add(d)
	if l.Until.After(until) {
		until = l.Until
	}
	if d == time.Minute {
		time.Sleep(50 * time.Millisecond)
	}
	x.mu.Lock()
	x.ends = append(x.ends, until)
	x.mu.Unlock()
	l.Until = until
	return l, nil
}

func (x *extendLedger) SaveSteps(_ context.Context, l ledger.Lease, _ ...ledger.StepChange) (ledger.Record, error) {
	return l.Record, nil
}
func (x *extendLedger) Complete(context.Context, ledger.Lease, ...ledger.StepChange) (ledger.Record, error) {
	return ledger.Record{Status: ledger.Done}, nil
}
func (x *extendLedger) Fail(context.Context, ledger.Lease, string, time.Duration, ...ledger.StepChange) (ledger.Record, error) {
	return ledger.Record{Status: ledger.Failed}, nil
}
func (x *extendLedger) Release(context.Context, ledger.Lease, string, time.Duration, ...ledger.StepChange) (ledger.Record, error) {
	return ledger.Record{Status: ledger.Failed}, nil
}
func (x *extendLedger) Bury(context.Context, ledger.Lease, string, ...ledger.StepChange) (ledger.Record, error) {
	return ledger.Record{Status: ledger.Dead}, nil
}
func (x *extendLedger) PayloadOf(context.Context, ledger.Record) ([]byte, error) { return nil, nil }
func (x *extendLedger) EnsurePayload(context.Context, ledger.Key, []byte, ledger.Identity) (bool, error) {
	return false, nil
}
func (x *extendLedger) TakeOrder(context.Context, ledger.Lease, string, int64, bool) (ledger.Taken, error) {
	return ledger.Taken{}, nil
}
func (x *extendLedger) Skip(context.Context, ledger.Lease, string) (ledger.Record, error) {
	return ledger.Record{Status: ledger.Done}, nil
}

// Two ExtendLease calls at once (a heartbeat and the handler before a long
// call) take turns, so the end granted last is never the shorter one: a
// lease that ended early would let the reclaimer hand a live worker's event
// to another.
func TestConcurrentExtendsNeverLeaveTheShorterEnd(t *testing.T) {
	t.Parallel()
	x := &extendLedger{}
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "long", func(ctx context.Context, ev *hookledger.Event) error {
		var wg sync.WaitGroup
		wg.Go(func() { ev.ExtendLease(ctx, time.Minute) }) // the heartbeat; its write is slow
		time.Sleep(10 * time.Millisecond)
		err := ev.ExtendLease(ctx, 2*time.Hour)
		wg.Wait()
		return err
	})
	body, err := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_long", Type: "long", SHA256: "x", Body: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	h := &processor.Handler{Ledger: x, Routes: engine.MustRoutes(r), Lease: time.Minute, MaxAttempts: 5}
	if resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: body}}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	if len(x.ends) != 2 {
		t.Fatalf("extends %v", x.ends)
	}
	if x.ends[1].Before(x.ends[0]) || time.Until(x.ends[1]) < time.Hour {
		t.Fatalf("lease ends in write order %v: the last is not the two-hour one", x.ends)
	}
}
