package receiver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// GitHub signs the body, not X-GitHub-Delivery. A captured delivery sent
// again under a pending event's id must not become that event's payload:
// under on-trouble a pending event has none while its message is queued,
// and every recovery path would run the effects on the captured body.
func TestCapturedBodyIsNotStoredUnderAPendingEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.Payload = config.PayloadOnTrouble
	legit := []byte(`{"action":"opened","number":7,"amount":4900}`)
	captured := []byte(`{"action":"opened","number":3,"amount":999999}`)
	send := func(id string, body []byte) (int, string) {
		t.Helper()
		resp := f.handle(t, f.request(t, f.github, "/webhooks/github/acme", githubSecret, webhook.Message{ID: id, Type: "pull_request", Body: body}))
		return resp.StatusCode, resp.Headers["X-Hookledger-Result"]
	}
	if code, res := send("D-legit", legit); code != 200 || res != "accepted" {
		t.Fatalf("legit delivery: %d %s", code, res)
	}
	id := ledger.Key{Source: "github", Tenant: "acme", ID: "D-legit"}
	if _, err := f.l.Payload(t.Context(), id); err == nil {
		t.Fatal("on-trouble stored the payload of an event that had no trouble")
	}
	if code, res := send("D-legit", captured); code != 200 || res != "duplicate_body_mismatch" {
		t.Fatalf("captured body under the pending id: %d %s", code, res)
	}
	if body, err := f.l.Payload(t.Context(), id); err == nil {
		t.Fatalf("the captured body became the event's payload: %s", body)
	}
	f.h.Mismatch = receiver.MismatchReject
	if code, _ := send("D-legit", captured); code != 409 {
		t.Fatalf("reject policy: %d", code)
	}
	// The sender's own retry (same body) still stores it.
	if code, res := send("D-legit", legit); code != 200 || res != "duplicate" {
		t.Fatalf("the sender's retry: %d %s", code, res)
	}
	if body, err := f.l.Payload(t.Context(), id); err != nil || string(body) != string(legit) {
		t.Fatalf("payload after the sender's retry: %q %v", body, err)
	}
}

// The first receiver writes a stored object beside the enqueue. If it
// died after the send, the message carries only the reference; the
// sender's retry (the same body) writes the object before its 2xx, whatever
// the record's status.
func TestDuplicateWritesAMissingStoredObject(t *testing.T) {
	t.Parallel()
	f, st := storeFixture(t)
	body := bigBody("evt_lost_object", 2<<20)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_lost_object"}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: f.stripe.BodyDigest(body), PayloadRef: st.Key(id, f.stripe.BodyDigest(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Claim(t.Context(), id, time.Minute); err != nil { // the processor has it
		t.Fatal(err)
	}
	rec, err := f.l.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blob.Body(t.Context(), f.l, st, rec); err == nil {
		t.Fatal("the object exists before the retry")
	}
	resp := f.handle(t, f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: body}))
	if resp.StatusCode != 200 || resp.Headers["X-Hookledger-Result"] != "duplicate" {
		t.Fatalf("retry: %d %v", resp.StatusCode, resp.Headers)
	}
	got, err := blob.Body(t.Context(), f.l, st, rec)
	if err != nil || string(got) != string(body) {
		t.Fatalf("stored object after the retry: %d bytes, %v", len(got), err)
	}
}

// A signed body can carry any string as its type; one past ledger.MaxType
// is refused before anything is written.
func TestLongEventTypeIs400BeforeAnyWrite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	typ := strings.Repeat("t", ledger.MaxType+1)
	body := []byte(`{"id":"evt_longtype","type":"` + typ + `"}`)
	resp := f.handle(t, f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: body}))
	if resp.StatusCode != 400 || !strings.Contains(resp.Body, "event type too long") {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if calls := f.meter.Snapshot(); len(calls) != 0 {
		t.Fatalf("calls made: %v", calls)
	}
	if n := f.items(t); n != 0 {
		t.Fatalf("%d items written", n)
	}
}
