package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hookledger/hookledger"
)

// Orders handles Shopify's orders/create in two steps: reserve the line
// items (the shop's API honours Idempotency-Key), then mail a receipt once
// (the mailer has no idempotency; its messages are found by reference).
type Orders struct {
	Shop, Mailer string
	Client       *http.Client
}

type order struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
	Items []struct {
		SKU      string `json:"sku"`
		Quantity int    `json:"quantity"`
	} `json:"line_items"`
}

// HandleEvent runs the two steps.
func (h *Orders) HandleEvent(ctx context.Context, ev *hookledger.Event) error {
	var o order
	if err := json.Unmarshal(ev.Body, &o); err != nil || len(o.Items) == 0 {
		return hookledger.Permanent(fmt.Errorf("orders/create: no order with line items: %v", err))
	}
	if _, err := ev.Step(ctx, "reserve", func(ctx context.Context, key string) (string, error) {
		return "", h.post(ctx, h.Shop+"/reservations", key, map[string]any{"order": o.ID, "items": o.Items})
	}); err != nil {
		return err
	}
	_, err := ev.Step(ctx, "receipt", func(ctx context.Context, key string) (string, error) {
		return "", h.post(ctx, h.Mailer+"/messages", "", map[string]any{"to": o.Email, "order": o.ID, "reference": key})
	}, hookledger.AtMostOnce(), hookledger.Check(h.sent))
	return err
}

func (h *Orders) post(ctx context.Context, u, key string, v any) error {
	b, _ := json.Marshal(v)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return hookledger.Permanent(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return hookledger.ResponseError(resp) // retried or permanent, by status
}

// sent finds the receipt by its reference.
func (h *Orders) sent(ctx context.Context, key string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Mailer+"/messages?reference="+url.QueryEscape(key), nil)
	if err != nil {
		return "", err
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var found []json.RawMessage
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&found) != nil {
		return "", fmt.Errorf("message search answered %d", resp.StatusCode)
	}
	if len(found) == 0 {
		return "", fmt.Errorf("no receipt %s: %w", key, hookledger.ErrNotDone)
	}
	return "", nil
}
