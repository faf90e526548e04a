package reclaimer_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

// A message that reached the DLQ may hold the only copy of its body (the
// payload policy on-trouble, and workers killed before they kept it). A
// scheduled run stores such bodies in the ledger and deletes the messages
// the ledger now covers; the event is then re-driven as usual. Messages the
// ledger cannot use stay for the operator.
func TestDeadLettersKeepTheBodiesTheLedgerLacks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	_, dlq := awstest.Queues(t, awstest.Config(t), queue.QueueSpec{})
	f.h.DeadLetters = &reclaimer.DeadLetters{API: f.sqs, URL: dlq, Ledger: f.l}

	bare := func(key string) ledger.Key { // a record with no stored body
		t.Helper()
		id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
		if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	crashed := bare("evt_dlq_crashed") // its worker died holding it
	if _, err := f.l.Claim(ctx, crashed, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	buried := bare("evt_dlq_dead")
	lease, err := f.l.Claim(ctx, buried, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Bury(ctx, lease, "message and body not seen"); err != nil {
		t.Fatal(err)
	}
	done := f.event(t, "evt_dlq_done")
	lease, err = f.l.Claim(ctx, done, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Complete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	gone := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_dlq_gone"}
	// A record whose body belongs in the payload store: the reclaimer and
	// replay read it only there, so the message stays.
	stored := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_dlq_s3"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: stored, Type: "invoice.paid", BodySHA256: "x", PayloadRef: "payloads/x"}); err != nil {
		t.Fatal(err)
	}
	// An earlier event's message under a key reused since: another digest.
	reused := bare("evt_dlq_reused")

	put := func(body string) {
		t.Helper()
		if _, err := f.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &dlq, MessageBody: &body}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []ledger.Key{crashed, buried, done, gone, stored, reused} {
		digest := "x"
		if id == reused {
			digest = "an-earlier-body"
		}
		b, err := queue.Encode(queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.paid", SHA256: digest, Body: []byte(`{"id":"` + id.ID + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		put(b)
	}
	put("not a message")

	f.clock.Advance(time.Minute) // the crashed worker's lease is over
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	rep := f.run(t)
	if d := rep.DeadLetters; d.Read != 7 || d.Kept != 2 || d.Cleared != 3 || d.Left != 4 {
		t.Fatalf("dead letters %+v; want 7 read, 2 bodies kept (crashed, dead), 3 cleared (those and the done one), 4 left (gone, unreadable, payload store, reused key)", d)
	}
	// Every message read needs a person: those taken back off the DLQ, to
	// find what kept failing, and those left, to act on them. NeedsOperator
	// counts both: it is the DLQ's alarm.
	if m := emf.String(); !strings.Contains(m, `"DeadLettersCleared":3`) || !strings.Contains(m, `"DeadLettersLeft":4`) || !strings.Contains(m, `"NeedsOperator":7`) {
		t.Errorf("metrics %q, want DeadLettersCleared 3, DeadLettersLeft 4, NeedsOperator 7", m)
	}
	for _, id := range []ledger.Key{stored, reused} {
		if _, err := f.l.Payload(ctx, id); err == nil {
			t.Errorf("%s: a payload was stored from a message the record cannot use", id.ID)
		}
	}
	for _, id := range []ledger.Key{crashed, buried} {
		if body, err := f.l.Payload(ctx, id); err != nil || string(body) != `{"id":"`+id.ID+`"}` {
			t.Errorf("%s: payload %q %v, want the DLQ message's body", id.ID, body, err)
		}
	}
	if _, err := f.l.Payload(ctx, done); err != nil {
		t.Errorf("the done event's payload (stored by the fixture) is gone: %v", err)
	}
	// The same run re-drove the crashed worker's event from the body it kept.
	if rep.Reset != 1 {
		t.Errorf("report %+v: want the crashed worker's event reset and re-driven", rep)
	}
	if keys := f.drain(t); len(keys) != 1 || keys[0] != crashed.ID {
		t.Errorf("queue %v, want %s", keys, crashed.ID)
	}
	if rec := f.get(t, buried); rec.Status != ledger.Dead {
		t.Errorf("the dead event is %s; an operator replays it (its body is now stored)", rec.Status)
	}
	// What was left is still in the DLQ once its short hiding ends.
	left := 0
	for deadline := time.Now().Add(40 * time.Second); left < 4 && time.Now().Before(deadline); {
		out, err := f.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &dlq, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60})
		if err != nil {
			t.Fatal(err)
		}
		left += len(out.Messages)
	}
	if left != 4 {
		t.Errorf("%d messages left in the DLQ, want 4", left)
	}
}

// Every run reads the DLQ, a continuation too: the pass is what watches
// the queue, and a chain of continuations holds the scheduled runs off for
// as long as it lasts. A run without DeadLetters never touches it.
// Regression: continuations skipped the pass.
func TestEveryRunReadsTheDeadLetters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	_, dlq := awstest.Queues(t, awstest.Config(t), queue.QueueSpec{})
	b, _ := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_x", Body: []byte("{}")})
	if _, err := f.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &dlq, MessageBody: aws.String(b)}); err != nil {
		t.Fatal(err)
	}
	if rep := f.run(t); rep.DeadLetters.Read != 0 {
		t.Fatalf("a run without DeadLetters read the DLQ: %+v", rep.DeadLetters)
	}
	f.h.DeadLetters = &reclaimer.DeadLetters{API: f.sqs, URL: dlq, Ledger: f.l}
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	rep, err := f.h.Handle(ctx, reclaimer.Input{Chain: 1})
	if err != nil || rep.DeadLetters.Read != 1 || rep.DeadLetters.Left != 1 {
		t.Fatalf("a continuation's pass: %+v %v, want the message read and left (its record is gone)", rep.DeadLetters, err)
	}
	if !strings.Contains(emf.String(), `"NeedsOperator":1`) {
		t.Errorf("metrics %q, want NeedsOperator 1", emf.String())
	}
}

// A DLQ the pass cannot read is a DLQ nobody watches: it needs a person as
// much as what it holds, and says why.
func TestAnUnreadableDeadLetterQueueNeedsAnOperator(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, dlq := awstest.Queues(t, awstest.Config(t), queue.QueueSpec{})
	f.h.DeadLetters = &reclaimer.DeadLetters{API: f.sqs, URL: dlq + "-deleted", Ledger: f.l}
	var emf, logs bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	f.h.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	rep := f.run(t)
	if !rep.DeadLetters.Unreadable || rep.DeadLetters.Read != 0 {
		t.Fatalf("dead letters %+v, want the queue unreadable", rep.DeadLetters)
	}
	if !strings.Contains(emf.String(), `"NeedsOperator":1`) {
		t.Errorf("metrics %q, want NeedsOperator 1", emf.String())
	}
	if !strings.Contains(logs.String(), `"level":"ERROR","msg":"dead-letter queue unreadable this run`) {
		t.Errorf("logs %s: want an error line saying the DLQ could not be read", logs.String())
	}
}
