package receiver_test

import (
	"bytes"
	"testing"

	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// Stripe signs a thin event notification as it signs a snapshot event:
// the HTTP door takes it keyed on its id, typed by its type, and one
// source takes both kinds (a migration from snapshot to thin events).
func TestThinEventAtTheHTTPDoor(t *testing.T) {
	t.Parallel()
	f := setup(t)
	thin := []byte(`{"id":"evt_test_65RC2ax7UF9pMBu1","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered",` +
		`"created":"2026-05-01T12:00:00.000Z","livemode":false,"context":"acct_1Nv0FGQ9RKHgCVdK",` +
		`"related_object":{"id":"mtr_123","type":"billing.meter","url":"/v1/billing/meters/mtr_123"}}`)
	for _, body := range [][]byte{thin, stripeBody("evt_snapshot_beside_thin")} {
		resp := f.handle(t, f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: body}))
		if resp.StatusCode != 200 || resp.Headers["X-Hookledger-Result"] != "accepted" {
			t.Fatalf("%s: %d %s", body, resp.StatusCode, resp.Body)
		}
	}
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_test_65RC2ax7UF9pMBu1"})
	if err != nil || rec.EventType != "v1.billing.meter.error_report_triggered" {
		t.Fatalf("%+v %v", rec, err)
	}
	var got []queue.Message
	for _, b := range awstest.Drain(t, f.sqs, f.queue) {
		m, _ := queue.Decode(b)
		got = append(got, m)
	}
	found := false
	for _, m := range got {
		found = found || m.ID == rec.ID && bytes.Equal(m.Body, thin)
	}
	if len(got) != 2 || !found {
		t.Errorf("messages %+v", got)
	}
}
