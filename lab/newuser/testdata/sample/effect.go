// Package effect is where your side effects live: the code that runs once in
// effect per webhook event, whatever the senders and the crashes do.
//
// Register routes events to handlers by source and event type. A handler
// performs its effects as named steps (ev.Step); the ledger records each
// step's completion, so a retry resumes after the last completed step. See
// package hookledger for the rules, and effect_test.go for how to test a
// handler with hookledgertest (every crash point of every step in one call).
//
// Effects own their settings: Register reads them from s, by name, once at
// cold start. Deployed, they come from the EffectSettings parameter (one
// JSON object, set per environment in samconfig.toml); locally, from the
// environment. A missing one stops the processor at cold start with the
// setting's name, where it was read and where to set it.
//
// The template ships one handler, InvoicePaid: charge the invoice through a
// payments API that honours Idempotency-Key, then notify the customer
// through an API that has no idempotency at all. Replace it with yours: this
// file and effect_test.go are all of it.
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
)

// Register adds your routes. It runs once at cold start.
func Register(r *hookledger.Router, s *hookledger.Settings) error {
	client := &http.Client{Timeout: 10 * time.Second}
	r.Handle("stripe", "invoice.paid", &InvoicePaid{
		Payments: &Payments{BaseURL: s.URL("PAYMENTS_URL"), Client: client},
		Notifier: &Notifier{BaseURL: s.URL("NOTIFY_URL"), Client: client},
	})
	return s.Err()
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
