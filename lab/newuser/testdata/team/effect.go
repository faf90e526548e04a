// Package effect: a team's own effects. Shopify orders reserve stock and
// mail a receipt; Stripe subscriptions are mirrored into the billing
// service, in order (package subscription).
package effect

import (
	"github.com/hookledger/hookledger/stripe"
	"net/http"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/effect/subscription"
)

// Register adds the routes and reads the team's settings.
func Register(r *hookledger.Router, s *hookledger.Settings) error {
	client := &http.Client{Timeout: 10 * time.Second}
	r.Handle("shopify", "orders/create", &Orders{Shop: s.URL("SHOP_URL"), Mailer: s.URL("MAILER_URL"), Client: client})
	sync := &subscription.Sync{Billing: s.URL("BILLING_URL"), Client: client}
	for _, typ := range []string{"customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted"} {
		r.Handle("stripe", typ, sync, hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	}
	return s.Err()
}
