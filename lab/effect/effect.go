// Package effect is the proof lab's copy of the template's sample effect:
// Stripe's invoice.paid charged through a payments API that honours
// Idempotency-Key, then notified through one with no idempotency at all.
// The demo, chaos, bench and the deployed-stack tests run this copy, so
// what they prove about the pipeline never depends on what a user puts in
// the template's effect/ folder, and replacing that folder changes nothing
// here. Keep the two in step when the sample changes.
//
// It also carries what the deployed-stack tests of the EventBridge doors
// need and the template's sample does not: customer.updated events
// forwarded to the forward bus as they came (ForwardEvents), and, when
// STRIPE_API_KEY is set, Stripe's thin billing-meter error reports, whose
// meter is fetched from Stripe's API (STRIPE_API_URL: the tests' stand-in)
// and notified once. And an InOrder route, customer.subscription.updated
// (Subscriptions), whose applied states the notification stub records in
// order, for the deployed tests of ordered resources (lab/upgrade).
package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/stripe"
)

// Register adds your routes. It runs once at cold start.
func Register(r *hookledger.Router, s *hookledger.Settings) error {
	client := &http.Client{Timeout: 10 * time.Second}
	notifier := &Notifier{BaseURL: s.URL("NOTIFY_URL"), Client: client}
	r.Handle("stripe", "invoice.paid", &InvoicePaid{
		Payments: &Payments{BaseURL: s.URL("PAYMENTS_URL"), Client: client},
		Notifier: notifier,
	})
	r.Handle("stripe", "customer.updated", hookledger.ForwardEvents)
	r.Handle("stripe", SubscriptionType, &Subscriptions{Notifier: notifier}, hookledger.InOrder(stripe.Object), hookledger.SkipStale())
	if key := s.Optional("STRIPE_API_KEY", ""); key != "" {
		f, err := stripe.NewFetcher(stripe.Options{Key: key, BaseURL: s.Optional("STRIPE_API_URL", "")})
		if err != nil {
			return err
		}
		r.Handle("stripe", MeterErrorType, &MeterErrors{Stripe: f, Notifier: notifier})
	}
	return s.Err()
}

// MeterErrorType is the thin event MeterErrors handles.
const MeterErrorType = "v1.billing.meter.error_report_triggered"

// MeterErrors handles Stripe's thin billing-meter error reports: it
// fetches the meter as it is now (a read, at the start of every attempt),
// then notifies once (at-most-once, found again by reference).
type MeterErrors struct {
	Stripe   *stripe.Fetcher
	Notifier *Notifier
}

// HandleEvent fetches the meter and notifies.
func (h *MeterErrors) HandleEvent(ctx context.Context, ev *hookledger.Event) error {
	raw, err := h.Stripe.FetchObject(ctx, ev)
	if err != nil {
		return err
	}
	var meter struct {
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		Status      string `json:"status"`
	}
	if err := json.Unmarshal(raw, &meter); err != nil || meter.ID == "" {
		return hookledger.Permanent(fmt.Errorf("%s: the fetched object is not a meter: %.80s", MeterErrorType, raw))
	}
	_, err = ev.Step(ctx, "notify", func(ctx context.Context, key string) (string, error) {
		return h.Notifier.Send(ctx, key, Notification{
			To: "billing-ops", Text: fmt.Sprintf("Meter %s (%s, %s) reported errors", meter.DisplayName, meter.ID, meter.Status), Event: ev.ID,
		})
	}, hookledger.AtMostOnce(), hookledger.Check(h.Notifier.Sent))
	return err
}

// SubscriptionType is the event Subscriptions handles, in order.
const SubscriptionType = "customer.subscription.updated"

// Subscriptions applies a subscription's updates in order (InOrder by
// Stripe's created, stale ones skipped): its "apply" step announces the
// new state through the notification API, at most once, so the stub's log
// is the order the states were applied in.
type Subscriptions struct {
	Notifier *Notifier
}

// HandleEvent applies the update.
func (h *Subscriptions) HandleEvent(ctx context.Context, ev *hookledger.Event) error {
	var in struct {
		Data struct {
			Object struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ev.Body, &in); err != nil || in.Data.Object.ID == "" {
		return hookledger.Permanent(fmt.Errorf("%s: body is not a subscription: %v", SubscriptionType, err))
	}
	sub := in.Data.Object
	_, err := ev.Step(ctx, "apply", func(ctx context.Context, key string) (string, error) {
		return h.Notifier.Send(ctx, key, Notification{To: sub.ID, Text: fmt.Sprintf("Subscription %s is %s", sub.ID, sub.Status), Event: ev.ID})
	}, hookledger.AtMostOnce(), hookledger.Check(h.Notifier.Sent))
	return err
}

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
			Account: ev.Tenant, Amount: inv.AmountPaid, Currency: inv.Currency, Customer: inv.Customer, Event: ev.ID,
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
			To: to, Text: fmt.Sprintf("Payment received: %d %s (charge %s)", inv.AmountPaid, inv.Currency, chargeID), Event: ev.ID,
		})
	}, hookledger.AtMostOnce(), hookledger.Check(h.Notifier.Sent))
	return err
}

// Payments is a payments API that honours Idempotency-Key (Stripe's does;
// so does the local stub, `hooklab payments`).
type Payments struct {
	BaseURL string
	Client  *http.Client
}

// ChargeRequest is one charge.
type ChargeRequest struct {
	Account  string `json:"account"` // the tenant's account: a delivery for one tenant never charges another's
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Customer string `json:"customer,omitempty"`
	Event    string `json:"event,omitempty"`
}

// Charge makes the charge under the idempotency key and returns its id.
func (p *Payments) Charge(ctx context.Context, key string, c ChargeRequest) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := call(ctx, p.Client, http.MethodPost, p.BaseURL+"/v1/charges", key, c, &out)
	return out.ID, err
}

// Find is the charge step's check: the charge made under the key, or
// ErrNotDone when there is none.
func (p *Payments) Find(ctx context.Context, key string) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := call(ctx, p.Client, http.MethodGet, p.BaseURL+"/v1/charges?idempotency_key="+url.QueryEscape(key), "", nil, &out)
	if he := notFound(err); he != nil {
		// A GET of the exact charge: 404 is the API saying there is none.
		return "", fmt.Errorf("%w: %w", he, hookledger.ErrNotDone)
	}
	if err != nil {
		return "", err
	}
	return out.ID, nil
}

// Notifier is a notification API without idempotency: every request sends
// one. Notifications can be looked up by the reference the sender attached.
type Notifier struct {
	BaseURL string
	Client  *http.Client
}

// Notification is one message.
type Notification struct {
	To        string `json:"to"`
	Text      string `json:"text"`
	Reference string `json:"reference"`
	Event     string `json:"event,omitempty"`
}

// Send sends the notification with the step's key as its reference, so the
// check can find it, and returns its id.
func (n *Notifier) Send(ctx context.Context, key string, m Notification) (string, error) {
	m.Reference = key
	var out struct {
		ID string `json:"id"`
	}
	err := call(ctx, n.Client, http.MethodPost, n.BaseURL+"/v1/notifications", "", m, &out)
	return out.ID, err
}

// Sent is the notify step's check: the notification sent with the key as
// reference, ErrNotDone when the search answers with none. Only an answer
// proves "not sent": a 404 is the search itself missing (a wrong URL, a
// gateway or key without the route), so it is an error like any failed
// request: the event is retried, and goes dead as indeterminate once its
// attempts are spent, instead of notifying twice.
func (n *Notifier) Sent(ctx context.Context, key string) (string, error) {
	var out []struct {
		ID string `json:"id"`
	}
	err := call(ctx, n.Client, http.MethodGet, n.BaseURL+"/v1/notifications?reference="+url.QueryEscape(key), "", nil, &out)
	if notFound(err) != nil {
		return "", fmt.Errorf("%w: the notification search is not there, so it cannot say whether the notification was sent", err)
	}
	if err != nil {
		return "", err
	}
	if len(out) == 0 {
		return "", fmt.Errorf("no notification with reference %s: %w", key, hookledger.ErrNotDone)
	}
	return out[0].ID, nil
}

// notFound is err's 404 answer, or nil. What a 404 means is the caller's
// to say: for a GET of one exact object, that there is none (ErrNotDone);
// for a search, that the lookup failed (retried).
func notFound(err error) *hookledger.HTTPError {
	var he *hookledger.HTTPError
	if errors.As(err, &he) && he.StatusCode == http.StatusNotFound {
		return he
	}
	return nil
}

// call makes one JSON request; hookledger.ResponseError says what an
// answer other than 2xx means (retried or permanent).
func call(ctx context.Context, client *http.Client, method, u, idemKey string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return hookledger.Permanent(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return hookledger.Permanent(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, req.URL.Path, err) // retried
	}
	defer resp.Body.Close()
	if err := hookledger.ResponseError(resp); err != nil {
		return err
	}
	if out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(out); err != nil {
			return fmt.Errorf("%s %s: unreadable answer: %w", method, req.URL.Path, err)
		}
	}
	return nil
}
