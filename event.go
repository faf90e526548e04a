package hookledger

import (
	"context"
	"errors"
	"fmt"
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

// IdempotencyKey is the deterministic downstream idempotency key for the
// side effect called name: the same on every run of this event, and
// different for every (source, tenant, id, name). Pass it to APIs that
// accept one (Stripe's Idempotency-Key, etc.). A step's function receives
// the key of the step's name, so ev.IdempotencyKey("charge") equals the key
// the step "charge" gets. 43 characters: "hl_" and 40 hex digits.
func (e *Event) IdempotencyKey(name string) string {
	return engine.DownstreamKey(e.Source, e.Tenant, e.ID, name)
}

// Step runs one named side effect of the event, at most once per successful
// recording: fn gets the step's downstream idempotency key and returns a
// small result (an id) that later steps and retries read back. If the
// ledger already records the step done, Step returns the recorded result
// without running fn. Steps run one after another; give each its own name
// (letters, digits, '_', '.', '-').
//
// The ledger keeps every step in the event's record, which stays under 1 KB,
// so an event's steps are small and few:
//
//   - a name is at most 64 bytes;
//   - a result is at most 256 bytes, valid UTF-8;
//   - all of the event's step names and results together take at most 512
//     bytes (nine 64-byte names alone would not fit);
//   - an event has at most 16 steps.
//
// A step whose name does not fit in what is left is refused before fn runs;
// a result that does not fit fails the event after fn ran. Either error is
// permanent (the event goes dead): use short names, return ids rather than
// documents, and make one step per batch of items, not one per item.
//
// By default a step is at-least-once (see the package doc). Options:
// AtMostOnce, Check.
//
// An error from fn is returned as is; return it from the handler to retry
// the event later (calling Step again with the same name in the same run is
// refused). Step also fails when the event's lease was lost to another
// worker (stop: the other worker finishes the event) and when an
// at-most-once step cannot be proven (the event goes dead whatever the
// handler returns).
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

// StepResult returns the result of a step recorded done, by this run or an
// earlier one, and whether it is done.
func (e *Event) StepResult(name string) (string, bool) {
	return e.run.Result(name)
}

// ExtendLease keeps the event's lease for at least d more from now: the
// lease ends at now+d or where it already ended, whichever is later, so it
// never moves earlier (d must be positive). Call it from long handlers
// before the lease runs out; a d that is not positive is a permanent error,
// as step misuse is. It fails with an error wrapping ErrLeaseLost if
// another worker has taken the event over. Stop then: no further step runs
// in this attempt, and your effects must not race theirs.
func (e *Event) ExtendLease(ctx context.Context, d time.Duration) error {
	if e.run == nil {
		return engine.ErrNoEngine
	}
	if d <= 0 {
		return Permanent(fmt.Errorf("hookledger: ExtendLease(%v): the extension must be positive", d))
	}
	return e.run.ExtendLease(ctx, d)
}

// forwardStep is the name of the step Forward runs: one forward per event.
const forwardStep = "forward"

// Forward publishes the event to the EventBridge bus the template's
// ForwardEventBus parameter names, for other services: detail as the
// event (nil: the event's body), wrapped with the ledger's identity of it
// (source, tenant, event id, type, and the step's downstream idempotency
// key, the same on every retry), under the EventBridge source
// "hookledger.SOURCE" and the event's type as detail-type. It runs as the
// at-least-once step "forward": once the ledger records it done, a retry
// does not publish again; a crash between the put and that record, or a
// put the bus answered after the timeout, publishes the event twice with
// the same key, which consumers use to drop the repeat. A refused entry is
// a failed step (retried); no bus configured, or an entry over
// EventBridge's 256 KB, is a permanent error (the event goes dead, alarmed,
// replayable once fixed).
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
// came (Event.Forward with the event's body), for a service that consumes
// verified, deduplicated events from a bus:
//
//	r.Handle("stripe", hookledger.Any, hookledger.ForwardEvents)
var ForwardEvents Handler = HandlerFunc(func(ctx context.Context, ev *Event) error { return ev.Forward(ctx, nil) })
