package engine

// An InOrder route asks about its event (OrderKey) before its handler
// runs; the runner (the processor against the ledger, hookledgertest in
// memory) answers with the event's Place, or with a StaleError or
// BusyError that stops the run before the handler.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// OrderKey is what an InOrder route asks about its event: the resource it
// is about and its position there. OK is false when the route found none.
type OrderKey struct {
	Resource string
	Position int64
	OK       bool
}

// Place is the answer: where the event stands among the events of its
// resource, judged before its handler runs.
type Place struct {
	Resource string // "" when the event was not ordered (no route option, or no position)
	Position int64
	// Newest is the newest position an event of the resource had taken
	// before this one, and NewestEvent that event's id; Known says whether
	// any had.
	Newest      int64
	NewestEvent string
	Known       bool
	// Stale: a newer position was taken; the event did not take the
	// resource. Tie: another event had taken this very position; the event
	// took the resource after it. Forced: an operator replayed the event
	// to apply even if stale (hookledger replay --apply-stale).
	Stale, Tie, Forced bool
}

func (p Place) String() string {
	switch {
	case p.Resource == "":
		return "not ordered"
	case p.Stale:
		return "stale: " + p.newer()
	case p.Forced && p.Known && p.Newest > p.Position:
		return fmt.Sprintf("applied although stale (replayed with --apply-stale): resource %s was at %d (event %s), now at this event's %d", p.Resource, p.Newest, p.NewestEvent, p.Position)
	case p.Tie:
		return fmt.Sprintf("resource %s at position %d, taken before by event %s at the same position", p.Resource, p.Position, p.NewestEvent)
	case p.Known:
		return fmt.Sprintf("resource %s at position %d (before: %d)", p.Resource, p.Position, p.Newest)
	}
	return "resource " + p.Resource + " at position " + strconv.FormatInt(p.Position, 10) + " (its first event)"
}

// newer says which newer position made the event stale.
func (p Place) newer() string {
	return fmt.Sprintf("resource %s is at position %d (event %s); this event's is %d", p.Resource, p.Newest, p.NewestEvent, p.Position)
}

// Guard answers an InOrder route for one run of one event.
type Guard interface {
	// Take judges the event at k and, unless it is stale, takes k's
	// resource for this run: no other event of the resource passes until
	// this run is over. It returns a *BusyError when another event's run
	// holds the resource for longer than the guard waits.
	Take(ctx context.Context, k OrderKey) (Place, error)
}

// StaleError is what an InOrder route with SkipStale returns instead of
// running its handler: the runner marks the event done as stale. The
// runner sets EarlierRun when the event's record shows that an earlier run
// may have applied it (ledger.Record.EarlierRun).
type StaleError struct {
	Place      Place
	EarlierRun string
}

func (e *StaleError) Error() string {
	if e.EarlierRun != "" {
		return "skipped as stale after a run that may have applied it (" + e.EarlierRun + "): " + e.Place.newer()
	}
	return "skipped as " + e.Place.String()
}

// BusyError says another event's run holds the resource: the event is
// retried later, when that run is over.
type BusyError struct {
	Resource string
	Holder   string // the holding event's id
	Err      error
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("resource %s is being applied by event %s: retried once that run is over: %v", e.Resource, e.Holder, e.Err)
}

func (e *BusyError) Unwrap() error { return e.Err }

// ErrNoGuard: an InOrder route's handler was called on an event that no
// runner handed over (built by hand, outside the pipeline and
// hookledgertest).
var ErrNoGuard = errors.New("hookledger: this route keeps its events in order (InOrder), which needs the event as the pipeline or hookledgertest hands it over")

// Take answers an InOrder route's question (see Guard) and keeps the
// answer for Place.
func (r *Run) Take(ctx context.Context, k OrderKey) (Place, error) {
	if r == nil || r.cfg.Guard == nil {
		return Place{}, ErrNoGuard
	}
	p, err := r.cfg.Guard.Take(ctx, k)
	if err == nil {
		r.mu.Lock()
		r.place = p
		r.mu.Unlock()
	}
	return p, err
}

// Place is where an InOrder route's Take placed the event (the zero Place
// when the route is not ordered).
func (r *Run) Place() Place {
	if r == nil {
		return Place{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.place
}
