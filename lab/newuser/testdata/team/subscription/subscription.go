// Package subscription mirrors Stripe subscriptions into the billing
// service, newest state last.
package subscription

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hookledger/hookledger"
)

// Sync puts the subscription's state to the billing service.
type Sync struct {
	Billing string
	Client  *http.Client
}

// HandleEvent writes the state the event carries.
func (s *Sync) HandleEvent(ctx context.Context, ev *hookledger.Event) error {
	var in struct {
		Data struct {
			Object struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ev.Body, &in); err != nil || in.Data.Object.ID == "" {
		return hookledger.Permanent(fmt.Errorf("%s: no subscription: %v", ev.Type, err))
	}
	sub := in.Data.Object
	_, err := ev.Step(ctx, "put", func(ctx context.Context, key string) (string, error) {
		b, _ := json.Marshal(map[string]string{"status": sub.Status})
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.Billing+"/subscriptions/"+sub.ID, bytes.NewReader(b))
		if err != nil {
			return "", hookledger.Permanent(err)
		}
		resp, err := s.Client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			return "", fmt.Errorf("PUT %s answered %d", req.URL.Path, resp.StatusCode)
		}
		return "", nil
	})
	return err
}
