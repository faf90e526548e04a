package reclaimer_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

// queued decodes what the reclaimer put on the queue.
func (f *fixture) queued(t *testing.T) []queue.Message {
	t.Helper()
	var out []queue.Message
	for _, b := range awstest.Drain(t, f.sqs, f.queue) {
		m, err := queue.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// A key used again once its record expired (derived keys, senders that
// reuse ids): the earlier event's payload item outlives its record until
// TTL deletes it, days later. The newer record, its body not stored yet
// (HOOKLEDGER_PAYLOAD=on-trouble) and its message lost, was re-driven with
// the earlier body under its own type and digest, so the processor ran the
// earlier event again as the newer one. The reclaimer now reads only the
// record's own body: it waits for the newer event's message, and re-drives
// it once its body is kept (here from the dead-letter queue).
func TestReclaimerNeverRedrivesAnEarlierEventsBody(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	_, dlq := awstest.Queues(t, awstest.Config(t), queue.QueueSpec{})
	f.h.DeadLetters = &reclaimer.DeadLetters{API: f.sqs, URL: dlq, Ledger: f.l}
	id := ledger.Key{Source: "zoom", Tenant: "acme", ID: "derived:0123"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "meeting.started", BodySHA256: "sha-earlier"}); err != nil {
		t.Fatal(err)
	}
	if err := f.l.PutPayload(ctx, id, []byte(`{"v":"earlier"}`), "sha-earlier"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(ledger.DefaultRetention + time.Hour) // expired; TTL has not removed the items
	if _, created, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "meeting.started", BodySHA256: "sha-newer"}); err != nil || !created {
		t.Fatalf("the key used again: created=%v err=%v", created, err)
	}
	f.clock.Advance(2 * time.Minute) // overdue: its message was lost

	rep := f.run(t)
	for _, m := range f.queued(t) {
		t.Errorf("re-driven %s with body %s (sha256 %s): the earlier event's body under the newer record", m.ID, m.Body, m.SHA256)
	}
	if rep.Redriven() != 0 || rep.Postponed != 1 {
		t.Errorf("report %+v, want the record waiting for its message", rep)
	}
	if rec := f.get(t, id); rec.Reclaims != 0 || rec.Status != ledger.Received {
		t.Errorf("record %+v, want it received, no reclaim counted", rec)
	}

	// The newer event's message reached the DLQ with the only copy of its
	// body: the scheduled run keeps it over the earlier event's item and
	// re-drives it.
	b, err := queue.Encode(queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "meeting.started", SHA256: "sha-newer", Body: []byte(`{"v":"newer"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &dlq, MessageBody: &b}); err != nil {
		t.Fatal(err)
	}
	rep = f.run(t)
	if rep.DeadLetters.Kept != 1 || rep.Requeued != 1 {
		t.Errorf("report %+v, want the newer body kept and the record re-driven", rep)
	}
	if got := f.queued(t); len(got) != 1 || string(got[0].Body) != `{"v":"newer"}` || got[0].SHA256 != "sha-newer" {
		t.Errorf("queued %+v, want the newer event once", got)
	}
}

// dlqDepth is the messages in the queue, visible or not.
func (f *fixture) dlqDepth(t *testing.T, url string) int {
	t.Helper()
	out, err := f.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// The DLQ pass kept a message's body as its record's payload whenever their
// digests did not both exist and differ: a message without a digest, or one
// with the record's digest and another type, became the payload and was
// re-driven; and a message of another event under a done record was deleted
// as a spent copy. Each is now left in the DLQ (JudgeDeadLetter), nothing
// is stored, and the records are untouched.
func TestDeadLettersOfAnotherEventAreLeft(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	_, dlq := awstest.Queues(t, awstest.Config(t), queue.QueueSpec{})
	f.h.DeadLetters = &reclaimer.DeadLetters{API: f.sqs, URL: dlq, Ledger: f.l}
	bare := func(key string) ledger.Key {
		t.Helper()
		id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
		if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	noDigest, otherType := bare("evt_no_digest"), bare("evt_other_type")
	done := f.event(t, "evt_done_reused")
	lease, err := f.l.Claim(ctx, done, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Complete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	for _, m := range []queue.Message{
		{Source: "stripe", Tenant: "acme", ID: noDigest.ID, Type: "invoice.paid", Body: []byte(`{"v":"no digest"}`)},
		{Source: "stripe", Tenant: "acme", ID: otherType.ID, Type: "invoice.voided", SHA256: "x", Body: []byte(`{"v":"other type"}`)},
		{Source: "stripe", Tenant: "acme", ID: done.ID, Type: "invoice.paid", SHA256: "an-earlier-body", Body: []byte(`{"v":"earlier"}`)},
	} {
		b, err := queue.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &dlq, MessageBody: &b}); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(2 * time.Minute)
	rep := f.run(t)
	if d := rep.DeadLetters; d.Read != 3 || d.Kept != 0 || d.Cleared != 0 || d.Left != 3 {
		t.Errorf("dead letters %+v; want all 3 read and left", d)
	}
	for _, id := range []ledger.Key{noDigest, otherType} {
		if b, err := f.l.Payload(ctx, id); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s: payload %q %v, want none stored from another event's message", id.ID, b, err)
		}
		if rec := f.get(t, id); rec.Status != ledger.Received || rec.Reclaims != 0 || rec.Attempts != 0 {
			t.Errorf("%s: record %+v changed", id.ID, rec)
		}
	}
	if got := f.queued(t); len(got) != 0 {
		t.Errorf("queued %+v, want nothing re-driven", got)
	}
	if n := f.dlqDepth(t, dlq); n != 3 {
		t.Errorf("%d messages in the DLQ, want the 3 left there", n)
	}
}
