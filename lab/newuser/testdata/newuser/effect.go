// Package effect: a new user's effects. Shopify's orders/create reserves the
// order's stock with the inventory API, which honours Idempotency-Key.
package effect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/hookledger/hookledger"
)

// Register adds the routes.
func Register(r *hookledger.Router, s *hookledger.Settings) error {
	r.Handle("shopify", "orders/create", &Reserve{BaseURL: s.URL("INVENTORY_URL"), Client: &http.Client{Timeout: 10 * time.Second}})
	return s.Err()
}

// Reserve reserves an order's line items, once per order.
type Reserve struct {
	BaseURL string
	Client  *http.Client
}

// HandleEvent runs the one step.
func (h *Reserve) HandleEvent(ctx context.Context, ev *hookledger.Event) error {
	var order struct {
		ID    int64 `json:"id"`
		Items []struct {
			SKU string `json:"sku"`
			Qty int    `json:"quantity"`
		} `json:"line_items"`
	}
	if err := json.Unmarshal(ev.Body, &order); err != nil {
		return hookledger.Permanent(fmt.Errorf("orders/create: %w", err))
	}
	_, err := ev.Step(ctx, "reserve", func(ctx context.Context, key string) (string, error) {
		body, _ := json.Marshal(map[string]any{"order": order.ID, "items": order.Items})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.BaseURL+"/reservations", bytes.NewReader(body))
		if err != nil {
			return "", hookledger.Permanent(err)
		}
		req.Header.Set("Idempotency-Key", key)
		resp, err := h.Client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			return "", fmt.Errorf("reservations answered %d", resp.StatusCode)
		}
		return "", nil
	})
	return err
}
