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

	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/ledger"
)

// Charge charges a customer through a payments API that honours
// Idempotency-Key (the local stub, `hookledger payments`, does; so does
// Stripe). The key is derived from the event, so however often the event is
// processed, and whichever worker processes it, the customer is charged
// once.
type Charge struct {
	BaseURL string
	Client  *http.Client
}

// invoice is the part of a Stripe-style invoice.paid event the effect reads.
type invoice struct {
	ID   string `json:"id"`
	Data struct {
		Object struct {
			AmountPaid int64  `json:"amount_paid"`
			Amount     int64  `json:"amount"`
			Currency   string `json:"currency"`
			Customer   string `json:"customer"`
		} `json:"object"`
	} `json:"data"`
}

// HandleEvent performs the charge.
func (c *Charge) HandleEvent(ctx context.Context, ev *processor.Event) error {
	var in invoice
	if err := json.Unmarshal(ev.Body, &in); err != nil {
		return processor.Permanent(fmt.Errorf("charge: body is not an invoice: %w", err))
	}
	obj := in.Data.Object
	amount := obj.AmountPaid
	if amount == 0 {
		amount = obj.Amount
	}
	if amount <= 0 || obj.Currency == "" {
		return processor.Permanent(errors.New("charge: invoice has no positive amount or no currency"))
	}
	body, _ := json.Marshal(map[string]any{"amount": amount, "currency": obj.Currency, "customer": obj.Customer, "event": ev.Key})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/v1/charges", bytes.NewReader(body))
	if err != nil {
		return processor.Permanent(fmt.Errorf("charge: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", ev.IdempotencyKey("charge"))
	resp, err := c.Client.Do(req)
	if err != nil {
		return fmt.Errorf("charge: payments API unreachable: %w", err) // retry
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusConflict || resp.StatusCode >= 500:
		return fmt.Errorf("charge: payments API answered %d: %s", resp.StatusCode, bytes.TrimSpace(msg)) // retry
	default:
		return processor.Permanent(fmt.Errorf("charge: payments API refused with %d: %s", resp.StatusCode, bytes.TrimSpace(msg)))
	}
}

// ChargeCheck is the reclaimer's downstream check for Charge: an event whose
// worker died mid-effect is done if the payments API already has a charge
// under the event's idempotency key.
type ChargeCheck struct {
	BaseURL string
	Client  *http.Client
}

// Done asks the payments API for the charge made with the event's key.
func (c *ChargeCheck) Done(ctx context.Context, rec ledger.Record) (bool, error) {
	key := processor.IdempotencyKey(rec.ID, "charge")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/v1/charges?idempotency_key="+url.QueryEscape(key), nil)
	if err != nil {
		return false, err
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("charge check: payments API answered %d", resp.StatusCode)
	}
}
