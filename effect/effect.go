// Package effect is where your side effects live: the code that runs once per
// webhook event. Register routes them by source and event type; each handler
// gets the event and a deterministic downstream idempotency key per named
// effect (ev.IdempotencyKey("charge")) to pass to APIs that accept one.
//
// The template ships one demonstration effect, Charge, which calls a
// payments API with an Idempotency-Key header. Replace it with yours.
package effect

import (
	"net/http"
	"time"

	"github.com/hookledger/hookledger/internal/processor"
)

// Config is what the effects need, read from the environment in main.
type Config struct {
	PaymentsURL string // PAYMENTS_URL
}

// Register adds your routes. It runs once at cold start.
func Register(r *processor.Router, c Config) {
	if c.PaymentsURL == "" {
		return // no downstream configured: events are recorded as processed with no effect
	}
	charge := &Charge{BaseURL: c.PaymentsURL, Client: &http.Client{Timeout: 10 * time.Second}}
	r.Handle("*", "invoice.paid", charge)
	r.Handle("*", "charge.requested", charge)
}
