// Package effect holds your side effects: Register routes the events you
// handle, and each effect runs as a named step. Replace the greeting with
// your own; a fuller example (a charge with an idempotency key, then a
// notification that has none, each with a check) is the engine's sample,
// package github.com/hookledger/hookledger/effect.
package effect

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hookledger/hookledger"
)

// Register adds your routes and reads your settings. It runs once, at cold
// start; deployed, the settings come from EffectSettings in samconfig.toml.
func Register(r *hookledger.Router, s *hookledger.Settings) error {
	greeting := s.Optional("GREETING", "hello")
	r.HandleFunc("stripe", "invoice.paid", func(ctx context.Context, ev *hookledger.Event) error {
		var inv struct {
			Data struct {
				Object struct {
					Customer string `json:"customer"`
				} `json:"object"`
			} `json:"data"`
		}
		if err := json.Unmarshal(ev.Body, &inv); err != nil {
			return hookledger.Permanent(fmt.Errorf("invoice.paid: body is not an invoice: %w", err)) // dead at once, alarmed
		}
		// A step runs once in effect: the ledger records it done with its
		// result. Call your API here and pass it key, the step's idempotency
		// key (the same on every retry of this event).
		_, err := ev.Step(ctx, "greet", func(ctx context.Context, key string) (string, error) {
			return fmt.Sprintf("%s, %s of %s", greeting, inv.Data.Object.Customer, ev.Tenant), nil
		})
		return err // an error retries the event later; a finished step never runs again
	})
	return s.Err()
}
