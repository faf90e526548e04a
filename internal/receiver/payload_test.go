package receiver_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// The policy has one default, the deployed one: a receiver whose Payload is
// unset stores no body for a new event whose enqueue succeeds. Before, the
// Handler's zero value meant always while HOOKLEDGER_PAYLOAD defaulted to
// on-trouble.
func TestPayloadPolicyDefaultsToOnTrouble(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.Payload = ""
	if resp := f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_default")); resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.PutItem"] != 1 {
		t.Errorf("new event cost %v, want 1 PutItem (the record, no payload: config.DefaultPayload is %s)", snap, config.DefaultPayload)
	}
	if _, err := f.l.Payload(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_default"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("payload: %v, want none stored", err)
	}
}

// With on-trouble, a new event is the record and the message: no payload
// item, two calls, two sequential round trips.
func TestOnTroubleNewEventWritesNoPayload(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.Payload = config.PayloadOnTrouble
	resp := f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_ot"))
	if resp.StatusCode != 200 || resp.Headers["X-Hookledger-Result"] != "accepted" {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.PutItem"] != 1 || snap["SQS.SendMessage"] != 1 || len(snap) != 2 {
		t.Errorf("on-trouble new event cost %v, want 1 PutItem (the record) and 1 SendMessage", snap)
	}
	if _, err := f.l.Payload(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_ot"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("payload: %v, want none stored", err)
	}
	if n := f.queued(t); n != 1 {
		t.Errorf("queue holds %d, want 1", n)
	}
}

// With on-trouble, a failed enqueue stores the payload before the 503, so
// the reclaimer can re-drive the event even if the sender never retries.
func TestOnTroubleStoresThePayloadWhenTheEnqueueFails(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.Payload = config.PayloadOnTrouble
	f.h.Queue = &queue.Sender{API: f.sqs, URL: f.queue + "-missing"}
	if resp := f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_ot_q")); resp.StatusCode != 503 {
		t.Fatalf("got %d, want 503", resp.StatusCode)
	}
	body, err := f.l.Payload(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_ot_q"})
	if err != nil || string(body) != string(stripeBody("evt_ot_q")) {
		t.Fatalf("payload after a failed enqueue: %q %v", body, err)
	}
	// A duplicate of the still-received record stores it too, whatever the
	// policy (the first receiver may have died before anything).
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_ot_orphan"}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: sha(stripeBody("evt_ot_orphan"))}); err != nil {
		t.Fatal(err)
	}
	if resp := f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_ot_orphan")); resp.Headers["X-Hookledger-Result"] != "duplicate" {
		t.Fatalf("duplicate: %v", resp.Headers)
	}
	if _, err := f.l.Payload(t.Context(), id); err != nil {
		t.Errorf("on-trouble duplicate of a received record stored no payload: %v", err)
	}
}

// rendezvous makes the payload write and the enqueue each wait for the
// other to have started: they complete only if they run at the same time.
type rendezvous struct {
	payloadStarted, sendStarted chan struct{}
	once1, once2                sync.Once
}

func (r *rendezvous) meet(ctx context.Context, mine chan struct{}, once *sync.Once, other chan struct{}) error {
	once.Do(func() { close(mine) })
	select {
	case <-other:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Second):
		return errors.New("the other write never started: payload and enqueue ran in sequence")
	}
}

type meetingLedger struct {
	*ledger.Ledger
	r *rendezvous
}

func (m meetingLedger) PutPayload(ctx context.Context, id ledger.Key, body []byte, digest string) error {
	if err := m.r.meet(ctx, m.r.payloadStarted, &m.r.once1, m.r.sendStarted); err != nil {
		return err
	}
	return m.Ledger.PutPayload(ctx, id, body, digest)
}

type meetingSender struct {
	next *queue.Sender
	r    *rendezvous
}

func (m meetingSender) Send(ctx context.Context, msg queue.Message) error {
	if err := m.r.meet(ctx, m.r.sendStarted, &m.r.once2, m.r.payloadStarted); err != nil {
		return err
	}
	return m.next.Send(ctx, msg)
}

// With always, the payload write and the enqueue overlap: the sender waits
// for the record and then for the slower of the two, not for their sum.
func TestAlwaysWritesThePayloadWhileEnqueueing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := &rendezvous{payloadStarted: make(chan struct{}), sendStarted: make(chan struct{})}
	f.h.Ledger = meetingLedger{Ledger: f.l, r: r}
	f.h.Queue = meetingSender{next: f.h.Queue.(*queue.Sender), r: r}
	if resp := f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_par")); resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if _, err := f.l.Payload(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_par"}); err != nil {
		t.Errorf("payload: %v", err)
	}
	if n := f.queued(t); n != 1 {
		t.Errorf("queue holds %d, want 1", n)
	}
}

// The window the concurrent writes open: the payload write fails while the
// message goes out. The sender gets 503 and retries; the retry finds the
// record still received and stores the payload.
func TestAlwaysPayloadFailureWithTheMessageSentIsRepairedByTheRetry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := &failingPayload{Ledger: f.l, fail: true}
	f.h.Ledger = fl
	req := f.stripeReq(t, "acme", stripeSecret, "evt_window")
	if resp := f.handle(t, req); resp.StatusCode != 503 {
		t.Fatalf("got %d, want 503", resp.StatusCode)
	}
	if n := f.queued(t); n != 1 {
		t.Fatalf("queue holds %d, want the message sent alongside the failed payload write", n)
	}
	fl.fail = false
	if resp := f.handle(t, req); resp.Headers["X-Hookledger-Result"] != "duplicate" {
		t.Fatalf("retry: %v", resp.Headers)
	}
	if _, err := f.l.Payload(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_window"}); err != nil {
		t.Errorf("payload after the retry: %v", err)
	}
}

// storeFixture is setup with an S3 payload store and Lambda's body limit.
func storeFixture(t *testing.T) (fixture, *blob.Store) {
	t.Helper()
	f := setup(t)
	cfg := awstest.Config(t, f.meter.APIOption)
	st := &blob.Store{API: blob.NewClient(cfg), Bucket: awstest.Bucket(t, cfg), Prefix: "payloads/"}
	f.h.Store, f.h.MaxBody = st, 6<<20
	f.meter.Reset()
	return f, st
}

func bigBody(id string, n int) []byte {
	noise := make([]byte, n*3/4)
	rand.Read(noise)
	return []byte(`{"id":"` + id + `","type":"invoice.paid","blob":"` + base64.StdEncoding.EncodeToString(noise) + `"}`)
}

// A 2 MB body is past what a ledger item and a message hold: with the
// store it is written to S3 before the answer, and the record and the
// message carry its key.
func TestStoreKeepsBodiesPastTheLedgersLimit(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{config.PayloadAlways, config.PayloadOnTrouble} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			f, st := storeFixture(t)
			f.h.Payload = policy
			key := "evt_2mb_" + policy
			body := bigBody(key, 2<<20)
			req := f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: body})
			if resp := f.handle(t, req); resp.StatusCode != 200 {
				t.Fatalf("2 MB body: got %d %s", resp.StatusCode, resp.Body)
			}
			if snap := f.meter.Snapshot(); snap["DynamoDB.PutItem"] != 1 || snap["S3.PutObject"] != 1 || snap["SQS.SendMessage"] != 1 {
				t.Errorf("calls %v, want the record, the object and the message", snap)
			}
			id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
			rec, err := f.l.Get(t.Context(), id)
			if err != nil || rec.PayloadRef != st.Key(id, rec.BodySHA256) {
				t.Fatalf("record ref %q %v, want %q", rec.PayloadRef, err, st.Key(id, rec.BodySHA256))
			}
			got, err := blob.Body(t.Context(), f.l, st, rec)
			if err != nil || string(got) != string(body) {
				t.Fatalf("stored body: %d bytes, %v", len(got), err)
			}
			out, err := f.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &f.queue, MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("receive: %v %d", err, len(out.Messages))
			}
			m, err := queue.Decode(*out.Messages[0].Body)
			if err != nil || m.Ref != rec.PayloadRef || m.Body != nil {
				t.Errorf("message: ref %q, %d body bytes, %v; want the reference and no body", m.Ref, len(m.Body), err)
			}
			// A duplicate costs one request, whatever the size.
			f.meter.Reset()
			if resp := f.handle(t, req); resp.Headers["X-Hookledger-Result"] != "duplicate_requeued" && resp.Headers["X-Hookledger-Result"] != "duplicate" {
				t.Fatalf("duplicate: %v", resp.Headers)
			}
		})
	}
}

func TestStoreThreshold(t *testing.T) {
	t.Parallel()
	f, st := storeFixture(t)
	f.h.StoreAbove = 1024
	small := f.stripeReq(t, "acme", stripeSecret, "evt_small")
	large := f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: []byte(`{"id":"evt_over","type":"invoice.paid","pad":"` + strings.Repeat("x", 2000) + `"}`)})
	for _, req := range []any{small, large} {
		if resp := f.handle(t, req.(events.APIGatewayV2HTTPRequest)); resp.StatusCode != 200 {
			t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
		}
	}
	if rec, _ := f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_small"}); rec.PayloadRef != "" {
		t.Errorf("a body under the threshold went to the store: %q", rec.PayloadRef)
	}
	over := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_over"}
	rec, _ := f.l.Get(t.Context(), over)
	if rec.PayloadRef != st.Key(over, rec.BodySHA256) {
		t.Errorf("a body over the threshold: ref %q, want the store", rec.PayloadRef)
	}
	if _, err := f.l.Payload(t.Context(), over); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a stored body also got a payload item: %v", err)
	}
}

// Without the store, the same 2 MB body is 413 before anything is written.
func TestWithoutTheStoreLargeBodiesAre413(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.MaxBody = 6 << 20
	req := f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: bigBody("evt_2mb_nostore", 2<<20)})
	if resp := f.handle(t, req); resp.StatusCode != 413 {
		t.Fatalf("got %d, want 413", resp.StatusCode)
	}
	if f.meter.Service("DynamoDB")+f.meter.Service("SQS") != 0 || f.items(t) != 0 {
		t.Errorf("a refused body reached AWS: %v", f.meter.Snapshot())
	}
}
