package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/ledger"
)

// The in-process wait for a busy resource: a first pause, doubled after
// each look, up to a longest one.
const (
	orderPollFirst = 20 * time.Millisecond
	orderPollMax   = 320 * time.Millisecond
)

var _ engine.Guard = (*work)(nil)

// Take is the guard of an InOrder route (engine.Guard): it takes the
// event's resource in the ledger for this run (ledger.TakeOrder) or says
// the event is stale. A resource another event's run holds is looked at
// again for up to OrderWait, then reported busy; a take that had to wait
// counts ResourceWaited.
func (w *work) Take(ctx context.Context, k engine.OrderKey) (engine.Place, error) {
	if !k.OK {
		w.log.WarnContext(ctx, "InOrder route found no position in the event (its OrderFunc returned ErrNoPosition): applied unordered")
		w.h.Metrics.Count("Unordered")
		return engine.Place{}, nil
	}
	w.mu.Lock()
	lease := w.lease
	w.mu.Unlock()
	forced := lease.Record.AppliesStale()
	wait := w.h.OrderWait
	if wait <= 0 {
		wait = DefaultOrderWait
	}
	until := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-wait).Before(until) {
		until = dl.Add(-wait) // leave the run time to give the event back
	}
	pause := orderPollFirst
	waited := false
	for {
		took, err := w.h.Ledger.TakeOrder(ctx, lease, k.Resource, k.Position, forced)
		var oe *ledger.OrderError
		switch {
		case err == nil:
			if waited {
				w.h.Metrics.Count("ResourceWaited")
			}
			p := engine.Place{Resource: k.Resource, Position: k.Position, Tie: took.Tie}
			if b := took.Before; b != nil {
				p.Known, p.Newest, p.NewestEvent = true, b.Position, b.Holder
				p.Forced = forced && b.Position > k.Position
			}
			if p.Forced {
				w.log.WarnContext(ctx, "stale event applied, as its replay asked (--apply-stale)", "resource", k.Resource,
					"position", k.Position, "newest", took.Before.Position, "newest_event", took.Before.Holder)
			}
			return p, nil
		case errors.As(err, &oe) && errors.Is(err, ledger.ErrStale):
			return engine.Place{Resource: k.Resource, Position: k.Position, Known: true, Newest: oe.Order.Position,
				NewestEvent: oe.Order.Holder, Stale: true}, nil
		case errors.As(err, &oe) && errors.Is(err, ledger.ErrBusy):
			left := time.Until(until)
			if left <= 0 {
				return engine.Place{}, &engine.BusyError{Resource: k.Resource, Holder: oe.Order.Holder, Err: err}
			}
			select {
			case <-ctx.Done():
				return engine.Place{}, &engine.BusyError{Resource: k.Resource, Holder: oe.Order.Holder, Err: ctx.Err()}
			case <-time.After(min(pause, left)):
			}
			pause, waited = min(2*pause, orderPollMax), true
		case errors.Is(err, ledger.ErrInvalid):
			return engine.Place{}, engine.PermanentError{Err: fmt.Errorf("InOrder: %w", err)}
		default:
			return engine.Place{}, err
		}
	}
}
