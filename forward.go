package hookledger

import (
	"context"

	"github.com/hookledger/hookledger/internal/engine"
)

// forwardStep is the name of the step Forward runs: one forward per event.
const forwardStep = "forward"

// Forward publishes the event to the EventBridge bus that the template's
// ForwardEventBus parameter names: detail (nil: the event's body) wrapped
// with the event's identity and the step's downstream idempotency key,
// under source "hookledger.SOURCE" and the event's type as detail-type.
// It runs as the at-least-once step "forward": a crash between the put and
// its record publishes twice with the same key, which consumers drop. A
// refused entry fails the step (retried). No bus, or an entry over
// EventBridge's 256 KB, is a permanent error.
func (e *Event) Forward(ctx context.Context, detail []byte) error {
	if e.run == nil {
		return engine.ErrNoEngine
	}
	if detail == nil {
		detail = e.Body
	}
	_, err := e.Step(ctx, forwardStep, func(ctx context.Context, key string) (string, error) {
		return e.run.Forward(ctx, engine.Forwarded{Source: e.Source, Tenant: e.Tenant, ID: e.ID, Type: e.Type, Key: key,
			Attempt: e.Attempt, ReceivedAt: e.ReceivedAt, Detail: detail})
	})
	return err
}

// ForwardEvents is a Handler that forwards every event routed to it as it
// came (Event.Forward with the event's body), for services that consume
// verified, deduplicated events from a bus:
//
//	r.Handle("stripe", hookledger.Any, hookledger.ForwardEvents)
var ForwardEvents Handler = HandlerFunc(func(ctx context.Context, ev *Event) error { return ev.Forward(ctx, nil) })
