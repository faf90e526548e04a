package reclaimer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

// A record whose body is stored nowhere (HOOKLEDGER_PAYLOAD=on-trouble, or a
// payload write that failed beside a successful enqueue) may have its
// message still on the queue: a backlog, or a redelivery after a crash.
// The reclaimer cannot re-drive it, and must not count reclaims toward
// burying it while that message may still come: it postpones it instead,
// looking again after the record's age.
func TestMissingPayloadWaitsForTheMessageWithoutCountingReclaims(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	recv := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_no_payload"}
	f.l.Create(ctx, ledger.NewEvent{Key: recv, BodySHA256: "x"})
	crashed := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_crashed_worker"}
	f.l.Create(ctx, ledger.NewEvent{Key: crashed, BodySHA256: "x"})
	if _, err := f.l.Claim(ctx, crashed, 30*time.Second); err != nil { // the worker dies holding it
		t.Fatal(err)
	}
	// Hours of backlog: many runs, far more than the five reclaims that
	// used to bury a record.
	for range 8 {
		f.clock.Advance(time.Hour)
		f.run(t)
	}
	if keys := f.drain(t); len(keys) != 0 {
		t.Fatalf("enqueued without a payload: %v", keys)
	}
	for _, id := range []ledger.Key{recv, crashed} {
		rec := f.get(t, id)
		if rec.Status.Terminal() || rec.Reclaims != 0 {
			t.Errorf("%s: status %s, %d reclaims; want it waiting, none counted", id.ID, rec.Status, rec.Reclaims)
		}
		if !rec.DueAt.After(f.clock.Now()) {
			t.Errorf("%s: due at %v, not postponed past now %v", id.ID, rec.DueAt, f.clock.Now())
		}
	}
	if rec := f.get(t, crashed); rec.Status != ledger.Processing {
		t.Errorf("the crashed worker's record was %s; its message's redelivery claims it from processing", rec.Status)
	}
	// The message arrives (the processor keeps the body as soon as the
	// event is in trouble, or completes it): with the body stored, the
	// reclaimer re-drives as before.
	if err := f.l.PutPayload(ctx, recv, []byte(`{"id":"evt_no_payload"}`), "x"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	rep := f.run(t)
	if rep.Requeued != 1 || rep.Postponed != 1 {
		t.Errorf("report %+v, want the stored one requeued and the other still waiting", rep)
	}
	if keys := f.drain(t); len(keys) != 1 || keys[0] != recv.ID {
		t.Errorf("queued %v, want %s", keys, recv.ID)
	}
}

// Past the longest a message can stay on a queue, nothing can bring the
// body back: reclaims are counted and the record is buried, alarmed.
func TestMissingPayloadPastTheQueuesRetentionIsBuried(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := awstest.Config(t)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: awstest.Table(t, cfg), Shards: 1, Retention: 30 * 24 * time.Hour, ReclaimAfter: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.h.Ledger = l
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_never_stored"}
	l.Create(t.Context(), ledger.NewEvent{Key: id, BodySHA256: "x"})
	f.clock.Advance(reclaimer.MessageLifetime)
	for range 6 {
		f.run(t)
		f.clock.Advance(2 * time.Hour)
	}
	rec, err := l.Get(t.Context(), id)
	if err != nil || rec.Status != ledger.Dead || rec.LastError == "" {
		t.Fatalf("record %+v %v, want dead with a cause", rec, err)
	}
}

// A body kept in the S3 payload store is re-driven with its reference.
func TestReclaimerRedrivesBodiesInThePayloadStore(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := awstest.Config(t)
	st := &blob.Store{API: blob.NewClient(cfg), Bucket: awstest.Bucket(t, cfg), Prefix: "payloads/"}
	f.h.Store = st
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_stored_in_s3"}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, BodySHA256: "x", PayloadRef: st.Key(id, "x")}); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(t.Context(), st.Key(id, "x"), []byte(`{"id":"evt_stored_in_s3"}`)); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	if rep := f.run(t); rep.Requeued != 1 {
		t.Fatalf("report %+v, want it requeued", rep)
	}
	out, err := f.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &f.queue, MaxNumberOfMessages: 1})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive %v %d", err, len(out.Messages))
	}
	m, err := queue.Decode(*out.Messages[0].Body)
	if err != nil || m.Ref != st.Key(id, "x") || string(m.Body) != `{"id":"evt_stored_in_s3"}` {
		t.Errorf("message %+v %v, want the reference and the body", m, err)
	}
}

// Under on-trouble a worker that claims a message and is killed before it
// keeps the body, on every delivery, leaves the only copy of the body in
// the message, which SQS moves to the dead-letter queue after
// maxReceiveCount deliveries. The record (processing, expired lease, no
// payload) must still end dead before it expires, with the default 7-day
// retention: it used to wait for MessageLifetime (14 days), expire first,
// and vanish without a Dead alarm. Dead, it says why and how to get the
// body back from the DLQ.
func TestBodyOnlyInTheDLQEndsDeadBeforeTheRecordExpires(t *testing.T) {
	t.Parallel()
	f := setup(t) // the ledger's default retention: 7 days
	ctx := t.Context()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_body_in_dlq"}
	rec, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if d := rec.ExpiresAt.Sub(rec.CreatedAt); d <= 7*24*time.Hour-time.Second || d > 7*24*time.Hour { // expires_at is in whole seconds
		t.Fatalf("retention %v, want the default 7 days", rec.ExpiresAt.Sub(rec.CreatedAt))
	}
	for range 5 { // maxReceiveCount deliveries, each worker killed after its claim
		if _, err := f.l.Claim(ctx, id, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(3 * time.Minute) // the visibility timeout
	}
	var dead ledger.Record
	for f.clock.Now().Before(rec.ExpiresAt) {
		f.run(t)
		got, err := f.l.Get(ctx, id)
		if err != nil {
			t.Fatalf("at %v (expires %v): %v", f.clock.Now().Sub(rec.CreatedAt), rec.ExpiresAt.Sub(rec.CreatedAt), err)
		}
		if got.Status == ledger.Dead {
			dead = got
			break
		}
		f.clock.Advance(time.Hour)
	}
	if dead.Status != ledger.Dead {
		t.Fatalf("record not dead by its expiry (%v)", rec.ExpiresAt)
	}
	if left := rec.ExpiresAt.Sub(f.clock.Now()); left < 12*time.Hour {
		t.Errorf("dead only %v before it expires; want about a day for the operator", left)
	}
	for _, want := range []string{"not seen since", "hookledger replay --dlq", "--id evt_body_in_dlq"} {
		if !strings.Contains(dead.LastError, want) {
			t.Errorf("cause %q does not say %q", dead.LastError, want)
		}
	}
	if keys := f.drain(t); len(keys) != 0 {
		t.Errorf("enqueued without a payload: %v", keys)
	}
}

// An event with an empty body whose payload was kept (an empty payload) is
// re-driven with an empty body, which the processor runs as such.
func TestEmptyPayloadIsRedrivenAsAnEmptyBody(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := ledger.Key{Source: "github", Tenant: "acme", ID: "d-empty"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "ping", BodySHA256: queue.EmptyBodySHA256}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.EnsurePayload(ctx, id, []byte{}, ledger.Identity{Type: "ping", BodySHA256: queue.EmptyBodySHA256}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	if rep := f.run(t); rep.Requeued != 1 {
		t.Fatalf("report %+v, want it requeued", rep)
	}
	out, err := f.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &f.queue, MaxNumberOfMessages: 1})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive %v %d", err, len(out.Messages))
	}
	m, err := queue.Decode(*out.Messages[0].Body)
	if err != nil || m.BodyOmitted || m.Body == nil || len(m.Body) != 0 {
		t.Errorf("message %s -> %+v %v, want an empty body carried", *out.Messages[0].Body, m, err)
	}
}
