package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// The reclaimer buries a record whose body was never stored in the ledger
// (HOOKLEDGER_PAYLOAD=on-trouble) once its message has not come back for
// the whole wait: the message may be in the dead-letter queue, its workers
// killed on every delivery. The way back the record's cause names: redrive
// the DLQ (the processor finds the event dead, keeps the body from the
// message and acknowledges it without running it), then replay the event
// from the kept body. The event's handler runs exactly once.
func TestDLQRedriveBringsBackTheBodyOfADeadEvent(t *testing.T) {
	t.Parallel()
	f := replaySetup(t)
	ctx := t.Context()
	id := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_body_in_dlq"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{ID: id, Type: "invoice.paid", BodySHA256: "sha-dlq"}); err != nil {
		t.Fatal(err)
	}
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Bury(ctx, lease, "message and body not seen since ..."); err != nil { // no payload stored
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_body_in_dlq"}`)
	snd := &queue.Sender{API: f.sq, URL: f.dlq}
	if err := snd.Send(ctx, queue.Message{Source: id.Source, Tenant: id.Tenant, Key: id.Key, Type: "invoice.paid", SHA256: "sha-dlq", Body: body}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error {
		if string(ev.Body) != string(body) {
			t.Errorf("handler saw %q, want %q", ev.Body, body)
		}
		runs.Add(1)
		return nil
	})
	proc := &processor.Handler{Ledger: f.l, Routes: r, Lease: time.Minute}
	consume := func() int { // awstest.Drain: a receive answer the emulator cuts short hides nothing for long
		t.Helper()
		n := 0
		for i, b := range awstest.Drain(t, f.sq, f.qurl) {
			resp, _ := proc.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: fmt.Sprint(i), Body: b}}})
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("processor failed the message: %v", resp.BatchItemFailures)
			}
			n++
		}
		return n
	}
	one := replayOptions{source: id.Source, tenant: id.Tenant, key: id.Key}

	// No payload: the replay cannot run yet, and says where to look.
	if code := f.r.run(ctx, one); code != 1 || !strings.Contains(f.err.String(), "--dlq") {
		t.Fatalf("replay without a payload: exit %d, stderr %q", code, f.err)
	}
	// Redrive the DLQ: the processor keeps the body, the event stays dead.
	if code := f.r.run(ctx, replayOptions{dlq: f.dlq}); code != 0 || !strings.Contains(f.out.String(), "replay --source stripe --tenant acme --key evt_body_in_dlq") {
		t.Fatalf("redrive: exit %d, stdout %q, stderr %q", code, f.out, f.err)
	}
	if n := consume(); n != 1 || runs.Load() != 0 {
		t.Fatalf("consumed %d messages, handler ran %d times; want 1 and 0 (a dead event runs only when replayed)", n, runs.Load())
	}
	if rec, _ := f.l.Get(ctx, id); rec.Status != ledger.Dead {
		t.Fatalf("status %s after the redrive, want dead", rec.Status)
	}
	if got, err := f.l.Payload(ctx, id); err != nil || string(got) != string(body) {
		t.Fatalf("payload %q %v, want the body the DLQ's message carried", got, err)
	}
	// Replay it: it runs once, from the kept body.
	if code := f.r.run(ctx, one); code != 0 {
		t.Fatalf("replay: exit %d, stderr %q", code, f.err)
	}
	if n := consume(); n != 1 || runs.Load() != 1 {
		t.Fatalf("consumed %d messages, handler ran %d times; want 1 and 1", n, runs.Load())
	}
	if rec, _ := f.l.Get(ctx, id); rec.Status != ledger.Done {
		t.Errorf("status %s after the replay, want done", rec.Status)
	}
}
