package reconcile_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/lab/providerstub"
	"github.com/hookledger/hookledger/stripe"
)

// Thin events lost in an outage are listed through Stripe's v2 Events API
// (25 of them: two pages of its default 20), fed through the receiver and
// processed once each, as the lost snapshot events are; the body processed
// is the listed event, which the stripe package reads as a notification.
func TestReconcileHealsThinEvents(t *testing.T) {
	t.Parallel()
	o := setupOutage(t)
	ctx := t.Context()
	r := &reconcile.Reconciler{Ledger: o.ledger, Feeder: &reconcile.HTTPFeeder{Webhook: o.url + "/webhooks/{source}/{tenant}"}, Backoff: 50 * time.Millisecond}
	var all, delivered, lost []string
	for i := range 25 {
		meter := providerstub.RelatedObject{ID: fmt.Sprintf("mtr_%02d", i), Type: "billing.meter", Path: fmt.Sprintf("/v1/billing/meters/mtr_%02d", i)}
		id, _, err := o.stub.Stripe.ThinEvent("v1.billing.meter.error_report_triggered", "", meter, json.RawMessage(`{"id":"`+meter.ID+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
		o.stub.Stripe.SetDown(i%3 == 0)
		if ok, err := o.stub.Stripe.DeliverThin(ctx, id); err != nil {
			t.Fatal(err)
		} else if ok {
			delivered = append(delivered, id)
		} else {
			lost = append(lost, id)
		}
	}
	o.stub.Stripe.SetDown(false)
	o.settle(t, "stripe", delivered)

	rep, err := r.Run(ctx, o.job(t, reconcile.Spec{Source: "stripe", Tenant: "acme", Thin: true}, false))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seen != 25 || rep.Missing != len(lost) || rep.Fed != len(lost) || rep.Failed != 0 {
		t.Fatalf("reconcile: %+v", rep.Counts)
	}
	o.settle(t, "stripe", all)
	o.once(t, "stripe", all)
	o.runs.mu.Lock()
	body := o.runs.bodies["stripe/"+lost[0]]
	o.runs.mu.Unlock()
	th, err := stripe.Parse(&hookledger.Event{ID: lost[0], Body: body})
	if err != nil || th.RelatedObject == nil || th.RelatedObject.URL == "" {
		t.Fatalf("the fed body is not a thin event: %v %s", err, body)
	}
	// A second run finds none missing.
	if rep, err := r.Run(ctx, o.job(t, reconcile.Spec{Source: "stripe", Tenant: "acme", Thin: true}, false)); err != nil || rep.Missing != 0 {
		t.Fatalf("second run: %+v %v", rep.Counts, err)
	}
}
