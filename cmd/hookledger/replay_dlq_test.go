package main

import (
	"context"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_body_in_dlq"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "sha-dlq"}); err != nil {
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
	if err := snd.Send(ctx, queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.paid", SHA256: "sha-dlq", Body: body}); err != nil {
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
	proc := &processor.Handler{Ledger: f.l, Routes: engine.MustRoutes(r), Lease: time.Minute}
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
	one := replayOptions{source: id.Source, tenant: id.Tenant, id: id.ID}

	// No payload: the replay cannot run yet, and says where to look.
	if code := f.r.run(ctx, one); code != 1 || !strings.Contains(f.err.String(), "--dlq") {
		t.Fatalf("replay without a payload: exit %d, stderr %q", code, f.err)
	}
	// Redrive the DLQ: the processor keeps the body, the event stays dead.
	if code := f.r.run(ctx, replayOptions{dlq: f.dlq}); code != 0 || !strings.Contains(f.out.String(), "replay --source stripe --tenant acme --id evt_body_in_dlq") {
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

// The DLQ keeps messages 14 days, records expire after the retention: an
// earlier event's dead letter can name a key the sender has used again
// since. replay --dlq moved every message back, and the processor ran the
// earlier body under the newer record, marked it done, and the newer
// event's own body never ran. It now applies the reclaimer's filter: the
// earlier event's message is skipped and listed (source/tenant/key and
// why), the others are redriven, the summary counts both, and
// --drop-skipped deletes what was skipped once the operator has looked.
func TestDLQRedriveSkipsAnEarlierEventUnderAReusedKey(t *testing.T) {
	t.Parallel()
	f := replaySetup(t)
	ctx := t.Context()
	reused := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_reused_id"}
	expired, err := ledger.New(dynamodb.NewFromConfig(awstest.Config(t)), ledger.Options{Table: f.l.Table(), Now: func() time.Time { return time.Now().Add(-8 * 24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := expired.Create(ctx, ledger.NewEvent{Key: reused, Type: "invoice.paid", BodySHA256: "sha-earlier"}); err != nil {
		t.Fatal(err)
	}
	if _, created, err := f.l.Create(ctx, ledger.NewEvent{Key: reused, Type: "invoice.paid", BodySHA256: "sha-newer"}); err != nil || !created {
		t.Fatalf("the key used again: created=%v err=%v", created, err)
	}
	other := f.event(t, f.l, "evt_other_dead_letter", ledger.Failed)
	dlq := &queue.Sender{API: f.sq, URL: f.dlq}
	for _, m := range []queue.Message{
		{Source: reused.Source, Tenant: reused.Tenant, ID: reused.ID, Type: "invoice.paid", SHA256: "sha-earlier", Body: []byte(`{"v":"earlier"}`)},
		{Source: other.Source, Tenant: other.Tenant, ID: other.ID, Type: "invoice.paid", SHA256: "sha-" + other.ID, Body: []byte(`{"v":"other"}`)},
	} {
		if err := dlq.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	code := f.r.run(ctx, replayOptions{dlq: f.dlq})
	out := f.out.String()
	if code != 1 || !strings.Contains(out, "skipped stripe/acme/evt_reused_id: not the event the ledger holds under this key (body digest differs") ||
		!strings.Contains(out, "redriven stripe/acme/evt_other_dead_letter") ||
		!strings.Contains(out, "redrove 1 message from") || !strings.Contains(out, "skipped 1 (1 not this event), left in the DLQ") {
		t.Fatalf("redrive: exit %d, stdout:\n%s\nstderr:\n%s", code, out, f.err)
	}
	var ran []string
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error {
		ran = append(ran, ev.ID+" "+string(ev.Body))
		return nil
	})
	proc := &processor.Handler{Ledger: f.l, Routes: engine.MustRoutes(r), Lease: time.Minute}
	consume := func() {
		t.Helper()
		for i, b := range awstest.Drain(t, f.sq, f.qurl) {
			if resp, _ := proc.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: fmt.Sprint(i), Body: b}}}); len(resp.BatchItemFailures) != 0 {
				t.Errorf("processor failed message %d: %v", i, resp.BatchItemFailures)
			}
		}
	}
	consume()
	// The newer event's own message arrives after the redrive (its first
	// delivery was still in flight).
	main := &queue.Sender{API: f.sq, URL: f.qurl}
	if err := main.Send(ctx, queue.Message{Source: reused.Source, Tenant: reused.Tenant, ID: reused.ID, Type: "invoice.paid", SHA256: "sha-newer", Body: []byte(`{"v":"newer"}`)}); err != nil {
		t.Fatal(err)
	}
	consume()
	sort.Strings(ran)
	if want := []string{`evt_other_dead_letter {"v":"other"}`, `evt_reused_id {"v":"newer"}`}; strings.Join(ran, "|") != strings.Join(want, "|") {
		t.Errorf("handler ran %q, want %q: each event once, with its own body", ran, want)
	}

	// Reviewed: drop it.
	f.out.Reset()
	if code := f.r.run(ctx, replayOptions{dlq: f.dlq, dropSkipped: true}); code != 0 ||
		!strings.Contains(f.out.String(), "dropped stripe/acme/evt_reused_id: not the event") || !strings.Contains(f.out.String(), "dropped 1 of them") {
		t.Fatalf("--drop-skipped: exit %d, stdout:\n%s\nstderr:\n%s", code, f.out, f.err)
	}
	if left := awstest.Drain(t, f.sq, f.dlq); len(left) != 0 {
		t.Errorf("%d messages left in the DLQ after --drop-skipped", len(left))
	}
	if rec, _ := f.l.Get(ctx, reused); rec.Status != ledger.Done || rec.Attempts != 1 {
		t.Errorf("the newer record %+v, want done after one attempt", rec)
	}
}
