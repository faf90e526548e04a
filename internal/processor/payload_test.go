package processor_test

import (
	"context"
	"errors"
	"github.com/hookledger/hookledger/internal/engine"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

func (f *fixture) payload(t *testing.T, key string) ([]byte, error) {
	t.Helper()
	return f.l.Payload(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: key})
}

// With on-trouble (or a payload write that failed beside a successful
// enqueue), a new event's record has no payload; the processor stores the
// body from the message whenever the event may need a re-drive, and never
// on the happy path.
func TestProcessorKeepsThePayloadOnlyForEventsInTrouble(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()

	ok := f.event(t, "evt_ok", "invoice.paid")
	f.meter.Reset()
	if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{ok}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("happy path failed: %v", resp.BatchItemFailures)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.UpdateItem"] != 2 || len(snap) != 1 {
		t.Errorf("happy path cost %v, want claim and complete only", snap)
	}
	if _, err := f.payload(t, "evt_ok"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("happy path stored a payload: %v", err)
	}

	flaky := f.event(t, "evt_flaky_keep", "flaky")
	declined := f.event(t, "evt_declined_keep", "declined")
	redelivered := f.event(t, "evt_redelivered", "invoice.paid")
	redelivered.Attributes = map[string]string{"ApproximateReceiveCount": "2"}
	busy := f.event(t, "evt_busy", "invoice.paid")
	if _, err := f.l.Claim(ctx, ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_busy"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	dead := f.event(t, "evt_dead_keep", "invoice.paid")
	lease, err := f.l.Claim(ctx, ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_dead_keep"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Bury(ctx, lease, "buried while its message was still queued"); err != nil {
		t.Fatal(err)
	}
	resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{flaky, declined, redelivered, busy, dead}})
	failed := map[string]bool{}
	for _, fl := range resp.BatchItemFailures {
		failed[fl.ItemIdentifier] = true
	}
	if !failed[flaky.MessageId] || !failed[busy.MessageId] || failed[declined.MessageId] || failed[redelivered.MessageId] || failed[dead.MessageId] {
		t.Errorf("batch failures %v, want the flaky and the busy message", resp.BatchItemFailures)
	}
	for key, why := range map[string]string{
		"evt_flaky_keep":    "failed: its message stays, the reclaimer may re-drive it later",
		"evt_declined_keep": "dead: its message is deleted, a replay needs the body",
		"evt_redelivered":   "redelivered: an earlier worker may have died holding it",
		"evt_busy":          "its message went back to the queue",
		"evt_dead_keep":     "found dead: its message is deleted, a replay needs the body",
	} {
		if body, err := f.payload(t, key); err != nil || string(body) != `{"id":"`+key+`"}` {
			t.Errorf("%s (%s): payload %q %v", key, why, body, err)
		}
	}
	// A payload already there is kept, not overwritten.
	again := f.event(t, "evt_kept_once", "flaky")
	if err := f.l.PutPayload(ctx, ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_kept_once"}, []byte("the receiver's copy"), "x"); err != nil {
		t.Fatal(err)
	}
	f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{again}})
	if body, _ := f.payload(t, "evt_kept_once"); string(body) != "the receiver's copy" {
		t.Errorf("stored payload overwritten: %q", body)
	}
}

// A message that references the payload store carries no body when the
// body is too large for it: the processor reads the object.
func TestProcessorReadsBodiesFromThePayloadStore(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := awstest.Config(t)
	st := &blob.Store{API: blob.NewClient(cfg), Bucket: awstest.Bucket(t, cfg), Prefix: "payloads/"}
	var seen []byte
	r := hookledger.NewRouter()
	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error {
		seen = ev.Body
		return nil
	})
	f.h.Routes = engine.MustRoutes(r)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_in_store"}
	body := []byte(`{"id":"evt_in_store","big":true}`)
	ref := st.Key(id, "x")
	if err := st.Put(t.Context(), ref, body); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x", PayloadRef: ref}); err != nil {
		t.Fatal(err)
	}
	enc, _ := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: id.ID, Type: "invoice.paid", SHA256: "x", Ref: ref})
	msg := events.SQSMessage{MessageId: "m-store", Body: enc}
	// Without a configured store the event is retried, never run blind.
	if resp, _ := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}}); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("no store configured: %v, want the message failed", resp.BatchItemFailures)
	}
	f.h.Store = st
	f.h.Now = func() time.Time { return time.Now().Add(time.Hour) } // past the failed attempt's backoff
	if resp, _ := f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{msg}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("with the store: %v", resp.BatchItemFailures)
	}
	if string(seen) != string(body) {
		t.Errorf("handler saw %q, want the stored body", seen)
	}
	if rec := f.status(t, id.ID); rec.Status != ledger.Done {
		t.Errorf("status %s, want done", rec.Status)
	}
}

// refusingLedger refuses the writes a test names; the rest reach the ledger.
type refusingLedger struct {
	*ledger.Ledger
	complete, ensure error
}

func (r *refusingLedger) Complete(ctx context.Context, lease ledger.Lease, changes ...ledger.StepChange) (ledger.Record, error) {
	if r.complete != nil {
		return ledger.Record{}, r.complete
	}
	return r.Ledger.Complete(ctx, lease, changes...)
}

func (r *refusingLedger) EnsurePayload(ctx context.Context, id ledger.Key, body []byte, ev ledger.Identity) (bool, error) {
	if r.ensure != nil {
		return false, r.ensure
	}
	return r.Ledger.EnsurePayload(ctx, id, body, ev)
}

// When the write that settles an event is refused, the message goes back to
// the queue with the event unfinished: its body is stored first. And an
// event whose body cannot be stored is not buried, since a dead event's
// message is deleted and its replay needs the body: the message stays.
func TestBodyStoredWhenTheSettlingWriteFails(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	rl := &refusingLedger{Ledger: f.l, complete: errors.New("throttled")}
	f.h.Ledger = rl

	refused := f.event(t, "evt_complete_refused", "invoice.paid")
	if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{refused}}); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("refused completion: failures %v, want the message back on the queue", resp.BatchItemFailures)
	}
	if body, err := f.payload(t, "evt_complete_refused"); err != nil || string(body) != `{"id":"evt_complete_refused"}` {
		t.Errorf("refused completion left payload %q %v, want the body stored", body, err)
	}

	rl.complete, rl.ensure = nil, errors.New("payload write unavailable")
	declined := f.event(t, "evt_bury_unstored", "declined")
	if resp, _ := f.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{declined}}); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("burial without a stored body: failures %v, want the message kept", resp.BatchItemFailures)
	}
	if rec := f.status(t, "evt_bury_unstored"); rec.Status == ledger.Dead {
		t.Errorf("buried without its body stored: %+v", rec)
	}
}
