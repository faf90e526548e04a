package hookledger

import (
	"context"
	"errors"
	"time"

	"github.com/hookledger/hookledger/internal/engine"
)

// Event is one verified webhook event, as the pipeline hands it to a
// Handler. Its fields are the event; its methods run steps against the
// ledger.
type Event struct {
	Source     string    // the sender's configured name, e.g. "stripe"
	Tenant     string    // whom the event is for, from the webhook URL
	ID         string    // the provider's event id (Stripe's evt_..., GitHub's delivery id), or one derived from the body
	Type       string    // the event type, e.g. "invoice.paid"
	Body       []byte    // the raw body, exactly as the sender signed it
	Attempt    int       // 1 on the first run; higher after a failure or a crash
	ReceivedAt time.Time // when the receiver accepted it

	run *engine.Run // the attempt's steps; nil outside the pipeline and hookledgertest
}

// IdempotencyKey is the downstream idempotency key of the side effect
// called name: the same on every run of this event, different for every
// (source, tenant, id, name). Pass it to APIs that take one (Stripe's
// Idempotency-Key). It is the key the step of that name gets: "hl_" and
// 40 hex digits.
func (e *Event) IdempotencyKey(name string) string {
	return engine.DownstreamKey(e.Source, e.Tenant, e.ID, name)
}

// Step runs the event's side effect called name. fn gets the step's
// downstream idempotency key and returns a small result (an id) that later
// steps and retries read back. A step the ledger records done returns its
// result without running fn. Steps run one after another, each with its own
// name (letters, digits, '_', '.', '-'). By default a step is at-least-once
// (see the package doc); the options are AtMostOnce and Check.
//
// The steps live in the event's record, which stays under 1 KB: a name is
// at most 64 bytes, a result at most 256 bytes of UTF-8, all names and
// results together at most 512 bytes, and an event has at most 16 steps. A
// name that does not fit is refused before fn runs; a result that does not
// fit fails the event after. Either error is permanent: use short names,
// return ids, and make one step per batch of items, not one per item.
//
// An error from fn is returned as is: return it from the handler to retry
// the event (calling the step again in the same run is refused). Step also
// fails when another worker took the event over (stop: it finishes the
// event), and when an at-most-once step cannot be proven (the event goes
// dead whatever the handler returns).
func (e *Event) Step(ctx context.Context, name string, fn func(ctx context.Context, key string) (string, error), opts ...StepOption) (string, error) {
	if e.run == nil {
		return "", engine.ErrNoEngine
	}
	spec := engine.Spec{Name: name}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&spec)
		}
	}
	if fn == nil {
		return "", Permanent(errors.New("hookledger: Step " + name + " has a nil function"))
	}
	return e.run.Step(ctx, spec, engine.Func(fn))
}
