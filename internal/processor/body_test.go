package processor_test

import (
	"context"
	"errors"
	"github.com/hookledger/hookledger/internal/engine"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// An accepted empty body (GitHub, Standard Webhooks, a generic source with
// an id header) under HOOKLEDGER_PAYLOAD=on-trouble: the receiver stores no
// payload and enqueues the empty body. The processor must run it as an
// empty body, once; it used to take the missing body for one left out for
// size, read the ledger's payload (absent) and retry until the event was
// dead. The message goes through the emulator's queue as the receiver
// sends it. A failure of the handler keeps the empty body as an empty
// payload, for the reclaimer's re-drive.
func TestEmptyBodyUnderOnTroubleIsProcessedOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	cfg := awstest.Config(t)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	sq := sqs.NewFromConfig(cfg)
	var mu sync.Mutex
	seen := map[string][][]byte{}
	r := hookledger.NewRouter()
	run := func(ev *hookledger.Event) {
		mu.Lock()
		seen[ev.ID] = append(seen[ev.ID], ev.Body)
		mu.Unlock()
	}
	r.HandleFunc("github", "ping", func(ctx context.Context, ev *hookledger.Event) error { run(ev); return nil })
	r.HandleFunc("github", "flaky", func(ctx context.Context, ev *hookledger.Event) error {
		run(ev)
		return errors.New("downstream 503")
	})
	f.h.Routes = engine.MustRoutes(r)
	receive := func(key, typ string) events.SQSMessage {
		t.Helper()
		id := ledger.Key{Source: "github", Tenant: "acme", ID: key}
		// What the receiver does under on-trouble: the record, no payload,
		// and the message with the (empty) body.
		if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: typ, BodySHA256: queue.EmptyBodySHA256}); err != nil {
			t.Fatal(err)
		}
		snd := &queue.Sender{API: sq, URL: qurl}
		if err := snd.Send(ctx, queue.Message{Source: "github", Tenant: "acme", ID: key, Type: typ, SHA256: queue.EmptyBodySHA256, Body: []byte{}}); err != nil {
			t.Fatal(err)
		}
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &qurl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
		}
		return events.SQSMessage{MessageId: aws.ToString(out.Messages[0].MessageId), Body: aws.ToString(out.Messages[0].Body)}
	}

	ping := receive("d-empty-1", "ping")
	for range 2 { // the second delivery is a redelivery of the same message
		if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{ping}}); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("empty body failed: %v (record %+v)", resp.BatchItemFailures, f.record(t, "github", "d-empty-1"))
		}
		ping.Attributes = map[string]string{"ApproximateReceiveCount": "2"}
	}
	if rec := f.record(t, "github", "d-empty-1"); rec.Status != ledger.Done || rec.Attempts != 1 {
		t.Errorf("record %s after %d attempts, want done after 1", rec.Status, rec.Attempts)
	}
	if got := seen["d-empty-1"]; len(got) != 1 || got[0] == nil || len(got[0]) != 0 {
		t.Errorf("handler saw %q, want one run with an empty (non-nil) body", got)
	}

	flaky := receive("d-empty-2", "flaky")
	if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{flaky}}); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failing handler: %v, want the message failed", resp.BatchItemFailures)
	}
	body, err := f.l.Payload(ctx, ledger.Key{Source: "github", Tenant: "acme", ID: "d-empty-2"})
	if err != nil || len(body) != 0 {
		t.Errorf("kept payload %q %v, want an empty one", body, err)
	}
}

func (f *fixture) record(t *testing.T, source, key string) ledger.Record {
	t.Helper()
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: source, Tenant: "acme", ID: key})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// orderLedger records the order of the ledger calls the processor makes.
type orderLedger struct {
	*ledger.Ledger
	mu    sync.Mutex
	calls []string
}

func (o *orderLedger) note(c string) {
	o.mu.Lock()
	o.calls = append(o.calls, c)
	o.mu.Unlock()
}

func (o *orderLedger) ClaimEvent(ctx context.Context, id ledger.Key, d time.Duration, ev ledger.Identity) (ledger.Lease, error) {
	o.note("claim")
	return o.Ledger.ClaimEvent(ctx, id, d, ev)
}

func (o *orderLedger) EnsurePayload(ctx context.Context, id ledger.Key, body []byte, ev ledger.Identity) (bool, error) {
	o.note("keep")
	return o.Ledger.EnsurePayload(ctx, id, body, ev)
}

// A message SQS delivers again (ApproximateReceiveCount > 1) has its body
// kept before the claim, so a worker killed anywhere after that (here right
// after the claim, the earliest crash point) leaves the body stored. It
// used to be kept after the claim: under on-trouble, a kill before that on
// every delivery sent the message to the DLQ with the only copy of the
// body. A first delivery keeps nothing (the happy path writes no payload).
func TestRedeliveredBodyIsKeptBeforeTheClaim(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	ol := &orderLedger{Ledger: f.l}
	f.h.Ledger = ol
	f.h.Lease = 10 * time.Millisecond // the killed worker's lease runs out at once
	f.h.Point = func(p string) {
		if p == inject.ProcessorAfterClaim {
			runtime.Goexit() // killed: nothing after this point runs
		}
	}
	msg := f.event(t, "evt_killed_each_time", "invoice.paid")
	for receive := 1; receive <= 2; receive++ {
		msg.Attributes = map[string]string{"ApproximateReceiveCount": string(rune('0' + receive))}
		ol.calls = nil
		if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}}); len(resp.BatchItemFailures) != 1 {
			t.Fatalf("delivery %d: the killed run acknowledged its message", receive)
		}
		_, err := f.payload(t, "evt_killed_each_time")
		switch receive {
		case 1:
			if !errors.Is(err, ledger.ErrNotFound) || len(ol.calls) != 1 {
				t.Fatalf("first delivery: payload %v, calls %v; want none kept, the claim only", err, ol.calls)
			}
		case 2:
			if err != nil {
				t.Fatalf("redelivery killed after its claim left no payload: %v", err)
			}
			if len(ol.calls) != 2 || ol.calls[0] != "keep" || ol.calls[1] != "claim" {
				t.Errorf("redelivery's ledger calls %v, want keep before claim", ol.calls)
			}
		}
		time.Sleep(30 * time.Millisecond) // past the dead worker's lease
	}
	// A redelivery of a done event keeps nothing (EnsurePayload finds it
	// done) and does not run it again.
	f.h.Point = nil
	f.h.Ledger = f.l
	f.h.Lease = time.Minute // a live worker's lease: 10 ms ran out under load before it completed
	done := f.event(t, "evt_done_redelivered", "invoice.paid")
	if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{done}}); len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp.BatchItemFailures)
	}
	done.Attributes = map[string]string{"ApproximateReceiveCount": "2"}
	if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{done}}); len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp.BatchItemFailures)
	}
	if _, err := f.payload(t, "evt_done_redelivered"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a redelivery of a done event stored a payload: %v", err)
	}
	if n := f.calledTimes("evt_done_redelivered"); n != 1 {
		t.Errorf("ran %d times, want 1", n)
	}
}
