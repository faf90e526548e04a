package stripe

import (
	"errors"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/webhook"
)

// Object is the OrderFunc of Stripe events: the object the event is about
// (data.object.id, or related_object.id for a thin event) and the event's
// created time, as Stripe's docs suggest for ordering events that arrive
// out of order. created counts whole seconds, so two updates of one object
// within a second tie (see hookledger.InOrder):
//
//	r.HandleFunc("stripe", "customer.subscription.updated", save, hookledger.InOrder(stripe.Object), hookledger.SkipStale())
func Object(ev *hookledger.Event) (hookledger.Position, error) {
	p, err := webhook.StripePosition(ev.Body)
	if errors.Is(err, webhook.ErrNoPosition) {
		return hookledger.Position{}, nil
	}
	if err != nil {
		return hookledger.Position{}, err
	}
	return hookledger.Position{Resource: p.Resource, At: time.Unix(0, p.At)}, nil
}
