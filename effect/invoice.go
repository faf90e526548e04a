package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hookledger/hookledger"
)

// InvoicePaid handles Stripe's invoice.paid: it charges the invoice on the
// tenant's account, then notifies the customer. Two steps:
//
//   - "charge" is at-least-once: the payments API honours Idempotency-Key,
//     so a repeat after a crash returns the first charge. Its check looks
//     the charge up by key, so a retry does not even repeat the request.
//   - "notify" is at-most-once: the notification API has no idempotency, so
//     a repeat would notify twice. The ledger records the step started
//     before the request; a retry that finds it started asks the API for a
//     notification with the step's key as reference, and sends only if
//     there is none.
type InvoicePaid struct {
	Payments *Payments
	Notifier *Notifier
}

// invoice is the part of a Stripe invoice.paid event the handler reads.
type invoice struct {
	Data struct {
		Object struct {
			ID         string `json:"id"`
			AmountPaid int64  `json:"amount_paid"`
			Currency   string `json:"currency"`
			Customer   string `json:"customer"`
			Email      string `json:"customer_email"`
		} `json:"object"`
	} `json:"data"`
}

// HandleEvent runs the two steps.
func (h *InvoicePaid) HandleEvent(ctx context.Context, ev *hookledger.Event) error {
	var in invoice
	if err := json.Unmarshal(ev.Body, &in); err != nil {
		return hookledger.Permanent(fmt.Errorf("invoice.paid: body is not an invoice: %w", err))
	}
	inv := in.Data.Object
	if inv.AmountPaid <= 0 || inv.Currency == "" {
		return hookledger.Permanent(errors.New("invoice.paid: no positive amount_paid or no currency"))
	}
	chargeID, err := ev.Step(ctx, "charge", func(ctx context.Context, key string) (string, error) {
		return h.Payments.Charge(ctx, key, ChargeRequest{
			Account: ev.Tenant, Amount: inv.AmountPaid, Currency: inv.Currency, Customer: inv.Customer, Event: ev.Key,
		})
	}, hookledger.Check(h.Payments.Find))
	if err != nil {
		return err
	}
	to := inv.Email
	if to == "" {
		to = inv.Customer
	}
	_, err = ev.Step(ctx, "notify", func(ctx context.Context, key string) (string, error) {
		return h.Notifier.Send(ctx, key, Notification{
			To: to, Text: fmt.Sprintf("Payment received: %d %s (charge %s)", inv.AmountPaid, inv.Currency, chargeID), Event: ev.Key,
		})
	}, hookledger.AtMostOnce(), hookledger.Check(h.Notifier.Sent))
	return err
}
