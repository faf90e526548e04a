package processor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

// Event is what a user's handler receives: one verified webhook event.
type Event struct {
	Source     string
	Tenant     string
	Key        string // the provider's event id (or derived key)
	Type       string
	Body       []byte // the raw body exactly as the sender signed it
	Attempt    int    // 1 on the first run; higher after a failure or crash
	ReceivedAt time.Time

	extend func(ctx context.Context, d time.Duration) error
}

// IdempotencyKey is the deterministic downstream idempotency key for the
// side effect called effect: the same for every run of this event, and
// different for every (source, tenant, key, effect). Pass it to APIs that
// accept one (Stripe's Idempotency-Key, etc.), so a re-run after a crash
// repeats no charge. 40 hex characters with an "hl_" prefix.
func (e *Event) IdempotencyKey(effect string) string {
	return IdempotencyKey(ledger.ID{Source: e.Source, Tenant: e.Tenant, Key: e.Key}, effect)
}

// IdempotencyKey derives the downstream key of effect for the event id.
func IdempotencyKey(id ledger.ID, effect string) string {
	h := sha256.New()
	h.Write([]byte(id.PK()))
	h.Write([]byte{0})
	h.Write([]byte(effect))
	return "hl_" + hex.EncodeToString(h.Sum(nil))[:40]
}

// ExtendLease keeps the event's lease for d more from now. Call it from long
// handlers before the lease runs out; it fails with ledger.ErrLeaseLost if
// another worker has taken the event over (stop then: your effects must not
// race theirs).
func (e *Event) ExtendLease(ctx context.Context, d time.Duration) error {
	if e.extend == nil {
		return errors.New("processor: event has no lease to extend")
	}
	return e.extend(ctx, d)
}

// EventHandler is the interface user code implements: perform the event's
// side effects, idempotently, using Event.IdempotencyKey for each.
// Returning an error retries the event later; wrap it with Permanent to
// stop retrying and mark the event dead.
type EventHandler interface {
	HandleEvent(ctx context.Context, ev *Event) error
}

// EventHandlerFunc adapts a function to EventHandler.
type EventHandlerFunc func(ctx context.Context, ev *Event) error

// HandleEvent calls f.
func (f EventHandlerFunc) HandleEvent(ctx context.Context, ev *Event) error { return f(ctx, ev) }

type permanent struct{ err error }

func (p permanent) Error() string { return "permanent: " + p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one that no retry can fix (a declined card, a
// payload the handler cannot read): the event goes to dead at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Router routes events to handlers by source and event type. "*" matches
// any source or any type; the most specific route wins (source and type,
// then source with any type, then any source with the type, then "*", "*").
type Router struct {
	routes map[[2]string]EventHandler
}

// NewRouter returns an empty router.
func NewRouter() *Router { return &Router{routes: map[[2]string]EventHandler{}} }

// Handle routes events of source and eventType to h. It panics on a nil
// handler or a duplicate route: both are programming errors found at cold
// start.
func (r *Router) Handle(source, eventType string, h EventHandler) {
	if h == nil {
		panic(fmt.Sprintf("processor: nil handler for %s/%s", source, eventType))
	}
	k := [2]string{source, eventType}
	if _, dup := r.routes[k]; dup {
		panic(fmt.Sprintf("processor: duplicate route %s/%s", source, eventType))
	}
	r.routes[k] = h
}

// HandleFunc is Handle for a function.
func (r *Router) HandleFunc(source, eventType string, f func(ctx context.Context, ev *Event) error) {
	r.Handle(source, eventType, EventHandlerFunc(f))
}

// Lookup returns the handler for an event, or nil.
func (r *Router) Lookup(source, eventType string) EventHandler {
	for _, k := range [][2]string{{source, eventType}, {source, "*"}, {"*", eventType}, {"*", "*"}} {
		if h, ok := r.routes[k]; ok {
			return h
		}
	}
	return nil
}
