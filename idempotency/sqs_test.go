package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/idempotency"
)

// effects counts runs per key, safely.
type effects struct {
	mu   sync.Mutex
	runs map[string]int
	fail map[string]bool
}

func (e *effects) fn(key string) func(context.Context, events.SQSMessage) error {
	return func(ctx context.Context, m events.SQSMessage) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		id := m.Body
		if key == "messageId" {
			id = m.MessageId
		}
		e.runs[id]++
		if e.fail[m.MessageId] {
			return errors.New("downstream unavailable")
		}
		if m.MessageId == "panics" {
			panic("bad message")
		}
		return nil
	}
}

func newEffects() *effects { return &effects{runs: map[string]int{}, fail: map[string]bool{}} }

func batch(arn string, msgs ...[2]string) events.SQSEvent {
	var ev events.SQSEvent
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: m[0], Body: m[1], EventSourceARN: arn})
	}
	return ev
}

func failedIDs(r events.SQSEventResponse) []string {
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

const queueARN = "arn:aws:sqs:us-east-1:000000000000:orders"

// TestConformanceSQSPartialFailures: per-message idempotency; only the
// failed message is reported; a redelivered batch runs only what had not
// completed.
func TestConformanceSQSPartialFailures(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		fx := newEffects()
		fx.fail["m-2"] = true
		h, err := idempotency.SQS(e.store, "fulfil", fx.fn("messageId"), idempotency.SQSConfig{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := deadline(t, 30*time.Second)
		ev := batch(queueARN, [2]string{"m-1", `{}`}, [2]string{"m-2", `{}`}, [2]string{"m-3", `{}`}, [2]string{"panics", `{}`})
		resp, err := h.Handle(ctx, ev)
		if err != nil || !slices.Equal(failedIDs(resp), []string{"m-2", "panics"}) {
			t.Fatalf("first delivery: %v %v", failedIDs(resp), err)
		}
		delete(fx.fail, "m-2")
		resp, _ = h.Handle(ctx, batch(queueARN, [2]string{"m-1", `{}`}, [2]string{"m-2", `{}`}, [2]string{"m-3", `{}`}))
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redelivery: %v", failedIDs(resp))
		}
		if fx.runs["m-1"] != 1 || fx.runs["m-2"] != 2 || fx.runs["m-3"] != 1 {
			t.Fatalf("runs %v: a redelivered, completed message ran again", fx.runs)
		}
	})
}

// TestConformanceSQSBusinessKey: with the key taken from the body, a
// producer that sent the same order twice (two message ids) gets it
// processed once.
func TestConformanceSQSBusinessKey(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		fx := newEffects()
		h, err := idempotency.SQS(e.store, "fulfil", func(ctx context.Context, m events.SQSMessage) error {
			return fx.fn("body")(ctx, events.SQSMessage{MessageId: m.MessageId, Body: "order o-1"})
		}, idempotency.SQSConfig{Config: idempotency.Config[events.SQSMessage, struct{}]{KeyPath: "body.order_id"}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := deadline(t, 30*time.Second)
		resp, _ := h.Handle(ctx, batch(queueARN, [2]string{"a", `{"order_id":"o-1","n":1}`}, [2]string{"b", `{"n":2, "order_id":"o-1"}`}))
		if len(resp.BatchItemFailures) != 0 || fx.runs["order o-1"] != 1 {
			t.Fatalf("failures %v, runs %v", failedIDs(resp), fx.runs)
		}
		// A body without the key is a failure (redelivered, then the DLQ),
		// never silently processed without idempotency.
		resp, _ = h.Handle(ctx, batch(queueARN, [2]string{"c", `{"n":3}`}))
		if !slices.Equal(failedIDs(resp), []string{"c"}) {
			t.Fatalf("unkeyed message: %v", failedIDs(resp))
		}
	})
}

// TestConformanceSQSInProgressAndFIFO: a message another invocation holds
// is reported for redelivery; on a FIFO queue a failure also fails every
// later message without running it.
func TestConformanceSQSInProgressAndFIFO(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := deadline(t, 30*time.Second)
		fx := newEffects()
		h, _ := idempotency.SQS(e.store, "fulfil", fx.fn("messageId"), idempotency.SQSConfig{})
		// Another invocation claims m-1 (it has the message in flight).
		k, _ := idempotency.KeyOf("fulfil", "m-1")
		if _, claimed, err := e.backend.Claim(ctx, k, idempotency.Claim{LeaseUntil: e.clock.Now().Add(time.Minute), ExpiresAt: e.clock.Now().Add(time.Hour)}); !claimed || err != nil {
			t.Fatal(claimed, err)
		}
		resp, _ := h.Handle(ctx, batch(queueARN, [2]string{"m-1", `{}`}, [2]string{"m-2", `{}`}))
		if !slices.Equal(failedIDs(resp), []string{"m-1"}) || fx.runs["m-1"] != 0 {
			t.Fatalf("in progress: %v, runs %v", failedIDs(resp), fx.runs)
		}
		fx.fail["f-2"] = true
		fifo := queueARN + ".fifo"
		resp, _ = h.Handle(ctx, batch(fifo, [2]string{"f-1", `{}`}, [2]string{"f-2", `{}`}, [2]string{"f-3", `{}`}))
		if !slices.Equal(failedIDs(resp), []string{"f-2", "f-3"}) || fx.runs["f-3"] != 0 {
			t.Fatalf("fifo: %v, runs %v", failedIDs(resp), fx.runs)
		}
	})
}

func TestConformanceSQSConcurrency(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		fx := newEffects()
		h, _ := idempotency.SQS(e.store, "fulfil", fx.fn("messageId"), idempotency.SQSConfig{Concurrency: 4})
		var msgs [][2]string
		for i := range 10 {
			msgs = append(msgs, [2]string{fmt.Sprintf("m-%d", i), `{}`})
		}
		msgs = append(msgs, msgs[3]) // a duplicate inside the batch
		resp, _ := h.Handle(deadline(t, 30*time.Second), batch(queueARN, msgs...))
		total := 0
		for _, n := range fx.runs {
			total += n
		}
		// The duplicate either replays or (while its twin runs) is in
		// progress and redelivered; it never runs twice.
		if total != 10 || len(resp.BatchItemFailures) > 1 || (len(resp.BatchItemFailures) == 1 && resp.BatchItemFailures[0].ItemIdentifier != "m-3") {
			t.Fatalf("runs %v, failures %v", fx.runs, failedIDs(resp))
		}
	})
}

// TestSQSAnswerIsAList: no failures is "batchItemFailures": [], not null
// (which MiniStack's poller cannot read).
func TestSQSAnswerIsAList(t *testing.T) {
	t.Parallel()
	h, _ := idempotency.SQS(idempotency.NewDisabled(), "op", func(context.Context, events.SQSMessage) error { return nil }, idempotency.SQSConfig{})
	for _, ev := range []events.SQSEvent{{}, batch(queueARN, [2]string{"m-1", "{}"})} {
		resp, _ := h.Handle(t.Context(), ev)
		if b, _ := json.Marshal(resp); string(b) != `{"batchItemFailures":[]}` {
			t.Fatalf("answer %s", b)
		}
	}
}

func TestSQSConfigErrors(t *testing.T) {
	t.Parallel()
	s := idempotency.NewDisabled()
	if _, err := idempotency.SQS(s, "op", nil, idempotency.SQSConfig{}); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("nil function: %v", err)
	}
	if _, err := idempotency.SQS(s, "op", func(context.Context, events.SQSMessage) error { return nil }, idempotency.SQSConfig{Concurrency: -1}); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("negative concurrency: %v", err)
	}
}
