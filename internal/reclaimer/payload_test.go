package reclaimer_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/tools/emulator"
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
	recv := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_no_payload"}
	f.l.Create(ctx, ledger.NewEvent{ID: recv, BodySHA256: "x"})
	crashed := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_crashed_worker"}
	f.l.Create(ctx, ledger.NewEvent{ID: crashed, BodySHA256: "x"})
	if _, err := f.l.Claim(ctx, crashed, 30*time.Second); err != nil { // the worker dies holding it
		t.Fatal(err)
	}
	// Hours of backlog: many runs, far more than MaxReclaims (2).
	for range 8 {
		f.clock.Advance(time.Hour)
		f.run(t)
	}
	if keys := f.drain(t); len(keys) != 0 {
		t.Fatalf("enqueued without a payload: %v", keys)
	}
	for _, id := range []ledger.ID{recv, crashed} {
		rec := f.get(t, id)
		if rec.Status.Terminal() || rec.Reclaims != 0 {
			t.Errorf("%s: status %s, %d reclaims; want it waiting, none counted", id.Key, rec.Status, rec.Reclaims)
		}
		if !rec.DueAt.After(f.clock.Now()) {
			t.Errorf("%s: due at %v, not postponed past now %v", id.Key, rec.DueAt, f.clock.Now())
		}
	}
	if rec := f.get(t, crashed); rec.Status != ledger.Processing {
		t.Errorf("the crashed worker's record was %s; its message's redelivery claims it from processing", rec.Status)
	}
	// The message arrives (the processor keeps the body as soon as the
	// event is in trouble, or completes it): with the body stored, the
	// reclaimer re-drives as before.
	if err := f.l.PutPayload(ctx, recv, []byte(`{"id":"evt_no_payload"}`)); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour)
	rep := f.run(t)
	if rep.Requeued != 1 || rep.Postponed != 1 {
		t.Errorf("report %+v, want the stored one requeued and the other still waiting", rep)
	}
	if keys := f.drain(t); len(keys) != 1 || keys[0] != recv.Key {
		t.Errorf("queued %v, want %s", keys, recv.Key)
	}
}

// Past the longest a message can stay on a queue, nothing can bring the
// body back: reclaims are counted and the record is buried, alarmed.
func TestMissingPayloadPastTheQueuesRetentionIsBuried(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := emulator.Config(t)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: emulator.Table(t, cfg), Shards: 1, Retention: 30 * 24 * time.Hour, ReclaimAfter: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.h.Ledger = l
	id := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_never_stored"}
	l.Create(t.Context(), ledger.NewEvent{ID: id, BodySHA256: "x"})
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
	cfg := emulator.Config(t)
	st := &blob.Store{API: blob.NewClient(cfg), Bucket: emulator.Bucket(t, cfg), Prefix: "payloads/"}
	f.h.Store = st
	id := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_stored_in_s3"}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{ID: id, BodySHA256: "x", PayloadRef: st.Key(id)}); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(t.Context(), st.Key(id), []byte(`{"id":"evt_stored_in_s3"}`)); err != nil {
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
	if err != nil || m.Ref != st.Key(id) || string(m.Body) != `{"id":"evt_stored_in_s3"}` {
		t.Errorf("message %+v %v, want the reference and the body", m, err)
	}
}
