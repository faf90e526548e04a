package hookledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// OrderFunc says which resource an event is about and where it stands
// among that resource's events. The zero Position means it has no such
// place: the event is applied unordered, with a warning and the metric
// Unordered. An error means a position that cannot be read: the event goes
// dead with the error as its cause. Read positions from the signed body,
// never an unsigned header, and answer the same on every run.
type OrderFunc func(ev *Event) (Position, error)

// Position is an event's place among the events of one resource: a time
// (At) or, when At is zero, a sequence number (Seq). Positions compare
// only within one source, tenant and resource; later or higher is newer.
// A route's OrderFunc gives one kind for all its events.
type Position struct {
	// Resource names the thing whose state the event carries (a
	// subscription's id): 1 to 512 bytes of UTF-8.
	Resource string
	// At is when the sender wrote that state (Stripe's created), from 1678
	// to 2262. An At more than 5 minutes after arrival makes the event
	// dead: it would make every real event of its resource stale.
	At time.Time
	// Seq grows with the resource's state (a version counter). No clock
	// judges it; hookledger order reset clears a wrong one.
	Seq int64
}

// maxAhead is how far after its arrival an event's time may lie: senders'
// clocks run a little ahead, and signed timestamps get the same 5 minutes.
const maxAhead = 5 * time.Minute

// Time positions are Unix nanoseconds in the ledger, which int64 holds
// from 1678 to 2262.
var (
	minAt = time.Unix(0, math.MinInt64)
	maxAt = time.Unix(0, math.MaxInt64)
)

// RouteOption configures one route: InOrder, SkipStale.
type RouteOption struct{ apply func(*route) }

// InOrder keeps this route's events in order per resource: no event older
// than one already applied to its resource is applied after it. Before the
// handler runs, the ledger compares the event's position (from f) with the
// newest taken for its resource:
//
//   - a newer event (or the first) runs and holds the resource until its
//     run is over; another event of the resource waits meanwhile;
//   - an older one is stale: ev.Order().Stale is true and the handler
//     decides, unless the route has SkipStale;
//   - one at a position another event took (Stripe counts whole seconds)
//     runs after it, with ev.Order().Tie: re-read the resource from the
//     provider if it matters.
//
// An event whose position cannot be read, or lies over 5 minutes after its
// arrival, goes dead without taking the resource. It costs one more ledger
// write per event (and a read or two); a stale one costs none. See
// docs/ordering.md.
func InOrder(f OrderFunc) RouteOption {
	return RouteOption{func(r *route) {
		if f == nil {
			panic("hookledger: InOrder(nil): give the route an OrderFunc, such as stripe.Object")
		}
		if r.order != nil {
			panic("hookledger: InOrder given twice for one route")
		}
		r.order = f
	}}
}

// SkipStale makes an InOrder route skip stale events: such an event is
// marked done without running, with the reason in the ledger, a log line
// and the metric Stale (StaleAfterRun when an earlier run may have applied
// it).
func SkipStale() RouteOption { return RouteOption{func(r *route) { r.skip = true }} }

// route is a handler with route options: what Router.Lookup returns for a
// route registered with any.
type route struct {
	h     Handler
	order OrderFunc
	skip  bool
}

// HandleEvent judges the event's order, then runs the handler unless the
// event is stale and the route skips stale events.
func (r *route) HandleEvent(ctx context.Context, ev *Event) error {
	if r.order == nil || ev == nil {
		return r.h.HandleEvent(ctx, ev)
	}
	k, err := r.key(ev)
	if err != nil {
		return Permanent(fmt.Errorf("hookledger: InOrder: %w; the event was not applied and took no resource", err))
	}
	place, err := ev.run.Take(ctx, k)
	if err != nil {
		return err
	}
	if place.Stale && r.skip {
		return &engine.StaleError{Place: place}
	}
	return r.h.HandleEvent(ctx, ev)
}

// key asks the route's OrderFunc where the event stands, and refuses a
// position the ledger cannot keep or must not take.
func (r *route) key(ev *Event) (engine.OrderKey, error) {
	p, err := r.order(ev)
	switch {
	case err != nil:
		return engine.OrderKey{}, fmt.Errorf("the event's position cannot be read (%w); fix the sender or the route's OrderFunc", err)
	case p == Position{}:
		return engine.OrderKey{}, nil
	case p.Resource == "" || len(p.Resource) > ledger.MaxResource || !utf8.ValidString(p.Resource):
		return engine.OrderKey{}, fmt.Errorf("the route's OrderFunc returned a resource the ledger cannot keep (%d bytes; want 1 to %d bytes of UTF-8)", len(p.Resource), ledger.MaxResource)
	case p.At.IsZero():
		return engine.OrderKey{Resource: p.Resource, Position: p.Seq, OK: true}, nil
	case p.Seq != 0:
		return engine.OrderKey{}, errors.New("the route's OrderFunc returned a Position with both At and Seq; give one")
	case p.At.Before(minAt) || p.At.After(maxAt):
		return engine.OrderKey{}, fmt.Errorf("the event's position %s is outside the years 1678 to 2262", p.At.UTC().Format(time.RFC3339Nano))
	case !ev.ReceivedAt.IsZero() && p.At.Sub(ev.ReceivedAt) > maxAhead:
		return engine.OrderKey{}, fmt.Errorf("the event's position %s lies more than %v after the event arrived (%s): the sender's clock is wrong or the body is not what it sent ",
			p.At.UTC().Format(time.RFC3339Nano), maxAhead, ev.ReceivedAt.UTC().Format(time.RFC3339))
	}
	return engine.OrderKey{Resource: p.Resource, Position: p.At.UnixNano(), OK: true}, nil
}

// Order is what an InOrder route knew of an event's place among the
// events of its resource when its handler ran.
type Order struct {
	// Resource and Position are the event's, from the route's OrderFunc;
	// Resource is "" when the event was not ordered.
	Resource string
	Position int64
	// Newest is the newest position taken before this event (when Known),
	// and NewestEvent that event's id.
	Newest      int64
	NewestEvent string
	Known       bool
	// Stale: a newer event of the resource was or is being applied. A
	// handler that acts anyway acts outside the order: the resource is not
	// held for it, and a newer event may run at the same time.
	Stale bool
	// Tie: an event at this very position was applied before this one; the
	// provider does not say which is newer.
	Tie bool
}

// Order returns the event's place among the events of its resource, as
// judged before its handler ran (the zero Order outside InOrder routes).
func (e *Event) Order() Order {
	p := e.run.Place()
	return Order{Resource: p.Resource, Position: p.Position, Newest: p.Newest, NewestEvent: p.NewestEvent,
		Known: p.Known, Stale: p.Stale && !p.Forced, Tie: p.Tie}
}

// ShopifyResource is the OrderFunc of Shopify resource webhooks: the
// resource's admin_graphql_api_id and its updated_at, in whole seconds.
// Deletions carry neither and are applied unordered.
func ShopifyResource(ev *Event) (Position, error) {
	return fromProvider(webhook.ShopifyPosition(ev.Body))
}

// PaddleEntity is the OrderFunc of Paddle Billing events: the entity
// (data.id) and occurred_at, the field Paddle's docs name for ordering.
func PaddleEntity(ev *Event) (Position, error) {
	return fromProvider(webhook.PaddlePosition(ev.Body))
}

// fromProvider turns a position read by package webhook into a Position.
func fromProvider(p webhook.Position, err error) (Position, error) {
	if errors.Is(err, webhook.ErrNoPosition) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, err
	}
	return Position{Resource: p.Resource, At: time.Unix(0, p.At)}, nil
}
