package receiver_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// Keys and types the queue or DynamoDB cannot carry faithfully are 400 with
// nothing written. Before, U+FFFF got 503 after the record write (SQS
// refused the message) and ended dead, and two ids with different lone
// surrogates collapsed into one key (the second was dropped as a duplicate).
func TestKeysAndTypesThePipelineCannotCarryAre400(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct{ name, body string }{
		{"U+FFFF in the id", "{\"id\":\"evt_\uffff\",\"type\":\"invoice.paid\"}"},
		{"U+FFFE in the id", "{\"id\":\"evt_\ufffe\",\"type\":\"invoice.paid\"}"},
		{"U+FFFF in the type", "{\"id\":\"evt_type_ffff\",\"type\":\"invoice.\uffff\"}"},
		{"lone high surrogate escape", `{"id":"evt_\ud800","type":"invoice.paid"}`},
		{"another lone surrogate escape", `{"id":"evt_\udbff","type":"invoice.paid"}`},
		{"lone surrogate in the type", `{"id":"evt_type_sur","type":"invoice.\udc00"}`},
		{"control character", `{"id":"evt_\u0001","type":"invoice.paid"}`},
	}
	for _, tt := range tests {
		req := f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: []byte(tt.body)})
		if resp := f.handle(t, req); resp.StatusCode != 400 {
			t.Errorf("%s: got %d %s, want 400", tt.name, resp.StatusCode, resp.Body)
		}
	}
	if f.meter.Service("DynamoDB")+f.meter.Service("SQS") != 0 || f.items(t) != 0 || f.queued(t) != 0 {
		t.Errorf("refused deliveries reached AWS: %v", f.meter.Snapshot())
	}
	// A valid surrogate pair is a real character and is accepted.
	req := f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: []byte(`{"id":"evt_\ud83d\ude00","type":"invoice.paid"}`)})
	if resp := f.handle(t, req); resp.StatusCode != 200 {
		t.Errorf("a surrogate pair: got %d %s", resp.StatusCode, resp.Body)
	}
}

// Each unusable key or type has its own 400, and where a delivery has two,
// the key's characters come first, then the type's checks, then the key's
// size: the identity is checked once (ledger.NewID), the answers stay.
func TestUnusableKeysAndTypesKeepTheirAnswers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	long := strings.Repeat("#", ledger.MaxPartLen) // 1536 bytes escaped, with a long tenant over 2048
	tenant := strings.Repeat("t", ledger.MaxPartLen)
	longType := strings.Repeat("t", ledger.MaxType+1)
	tests := []struct{ name, tenant, key, typ, want string }{
		{"key characters", "acme", "evt_\x01", "invoice.paid", "idempotency key has characters"},
		{"type characters", "acme", "evt_1", "invoice.\uffff", "event type has characters"},
		{"type too long", "acme", "evt_1", longType, "event type too long"},
		{"key too long", tenant, long, "invoice.paid", "idempotency key too long"},
		{"key too long, type characters", tenant, long, "invoice.\uffff", "event type has characters"},
		{"key characters, type too long", "acme", "evt_\x01", longType, "idempotency key has characters"},
	}
	for _, tt := range tests {
		d := receiver.Delivery{Source: "stripe", Tenant: tt.tenant, Key: tt.key, Type: tt.typ, Body: []byte(`{}`), Digest: "d"}
		res, body, _ := f.h.Claim(t.Context(), d, slog.New(slog.DiscardHandler))
		if res != receiver.BadRequest || !strings.Contains(body, tt.want) {
			t.Errorf("%s: got %s %s, want %s %q", tt.name, res, body, receiver.BadRequest, tt.want)
		}
	}
	if f.meter.Service("DynamoDB")+f.meter.Service("SQS") != 0 {
		t.Errorf("refused deliveries reached AWS: %v", f.meter.Snapshot())
	}
}

// A body the ledger cannot store even compressed is 413 before anything is
// written. Before, MaxBody could exceed what one DynamoDB item holds: a
// 600 KiB incompressible body got 503 after its record was written, on
// every retry, and the record ended dead.
func TestBodyTheLedgerCannotStoreIs413BeforeAnyWrite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.MaxBody = 1 << 20
	noise := make([]byte, 450*1024)
	rand.Read(noise)
	big := []byte(`{"id":"evt_noise","type":"invoice.paid","blob":"` + base64.StdEncoding.EncodeToString(noise) + `"}`)
	req := f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: big})
	if resp := f.handle(t, req); resp.StatusCode != 413 {
		t.Fatalf("600 KiB incompressible body: got %d %s, want 413", resp.StatusCode, resp.Body)
	}
	if f.meter.Service("DynamoDB")+f.meter.Service("SQS") != 0 || f.items(t) != 0 {
		t.Errorf("a refused body reached AWS: %v", f.meter.Snapshot())
	}
	// 700 KiB of JSON that compresses well fits, and is stored.
	text := []byte(`{"id":"evt_text","type":"invoice.paid","lines":"` + strings.Repeat("line item, 4900 usd; ", 700*1024/21) + `"}`)
	req = f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: text})
	if resp := f.handle(t, req); resp.StatusCode != 200 {
		t.Fatalf("700 KiB compressible body: got %d %s, want 200", resp.StatusCode, resp.Body)
	}
	if body, err := f.l.Payload(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_text"}); err != nil || len(body) != len(text) {
		t.Errorf("payload: %d bytes, %v", len(body), err)
	}
}

// failingPayload is the real ledger whose PutPayload fails while fail is set.
type failingPayload struct {
	*ledger.Ledger
	fail bool
}

func (f *failingPayload) PutPayload(ctx context.Context, id ledger.Key, body []byte, digest string) error {
	if f.fail {
		return errors.New("injected: payload write failed")
	}
	return f.Ledger.PutPayload(ctx, id, body, digest)
}

// A Zoom delivery (derived key) whose payload write failed got 503; Zoom's
// retry differs only in event_ts, so its raw digest differed, it was
// answered duplicate_body_mismatch and nothing was stored: the record could
// never be processed. Now the digest drops the volatile fields, and a
// received record without a payload gets one whatever the digest.
func TestRetryAfterAFailedPayloadWriteStoresThePayload(t *testing.T) {
	t.Parallel()
	const zoomSecret = "zoom-secret-token"
	f := setupWith(t, map[string]source.Source{
		"zoom": {Config: webhook.Config{Provider: "zoom"}, Tenants: map[string]source.Tenant{"acme": {Secrets: []string{"literal:" + zoomSecret}}}},
	}, &source.Secrets{})
	zv, _ := webhook.New(webhook.Config{Provider: "zoom"})
	zoom := func(ts string) []byte {
		return []byte(`{"event":"meeting.ended","event_ts":` + ts + `,"payload":{"account_id":"a1","object":{"id":"m1","uuid":"u1"}}}`)
	}
	fl := &failingPayload{Ledger: f.l, fail: true}
	f.h.Ledger = fl
	if resp := f.handle(t, f.request(t, zv, "/webhooks/zoom/acme", zoomSecret, webhook.Message{Body: zoom("1700000000000")})); resp.StatusCode != 503 {
		t.Fatalf("first delivery with a failing payload write: got %d, want 503", resp.StatusCode)
	}
	fl.fail = false
	resp := f.handle(t, f.request(t, zv, "/webhooks/zoom/acme", zoomSecret, webhook.Message{Body: zoom("1700000300000")}))
	if resp.StatusCode != 200 || resp.Headers["X-Hookledger-Result"] != "duplicate" {
		t.Errorf("Zoom's retry: got %d %s, want 200 duplicate (same event, only event_ts differs)", resp.StatusCode, resp.Headers["X-Hookledger-Result"])
	}
	recs, err := f.l.List(t.Context(), ledger.Received, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %v %v", recs, err)
	}
	if body, err := f.l.Payload(t.Context(), recs[0].Key); err != nil || len(body) == 0 {
		t.Fatalf("payload after the retry: %q %v; the event could never be processed", body, err)
	}

	// A different body is never stored, even under a received record
	// without a payload (TestCapturedBodyIsNotStoredUnderAPendingEvent).
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_nopayload"}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "digest-of-another-body"}); err != nil {
		t.Fatal(err)
	}
	resp = f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_nopayload"))
	if resp.StatusCode != 200 || resp.Headers["X-Hookledger-Result"] != "duplicate_body_mismatch" {
		t.Errorf("mismatched delivery: %d %v", resp.StatusCode, resp.Headers)
	}
	if body, err := f.l.Payload(t.Context(), id); err == nil || len(body) != 0 {
		t.Errorf("a mismatched body was stored as the event's payload: %q %v", body, err)
	}
}
