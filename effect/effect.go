// Package effect is where your side effects live: the code that runs once per
// webhook event. Register routes them by source and event type; each handler
// gets the event and a deterministic downstream idempotency key per named
// effect (ev.IdempotencyKey("charge")) to pass to APIs that accept one.
//
// Effects own their settings: Register reads them, once, at cold start, and
// fails with a message naming the variable when one is missing, so a
// misconfigured processor never starts instead of silently skipping effects.
//
// The template ships one demonstration effect, Charge, which calls a
// payments API with an Idempotency-Key header. Replace it with yours.
package effect

import (
	"errors"
	"net/http"
	"time"

	"github.com/hookledger/hookledger/internal/processor"
)

// Register adds your routes. It runs once at cold start; getenv is
// os.Getenv in the processor's main.
func Register(r *processor.Router, getenv func(string) string) error {
	paymentsURL := getenv("PAYMENTS_URL")
	if paymentsURL == "" {
		return errors.New("PAYMENTS_URL is empty: set the PaymentsUrl parameter (template.yaml, effect settings) to the payments API the charge effect calls")
	}
	charge := &Charge{BaseURL: paymentsURL, Client: &http.Client{Timeout: 10 * time.Second}}
	r.Handle("stripe", "invoice.paid", charge)
	return nil
}
