package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// StartedPoint and RanPoint name a step's crash points.
func StartedPoint(step string) string { return "step." + step + ".started" }

// RanPoint is hit right after a step's function returned, before anything
// about it is recorded.
func RanPoint(step string) string { return "step." + step + ".ran" }

// Forwarded is an event on its way to the forward bus (Event.Forward): its
// identity, the forward step's downstream key, and the detail.
type Forwarded struct {
	Source, Tenant, ID, Type string
	Key                      string // the forward step's downstream idempotency key
	Attempt                  int
	ReceivedAt               time.Time
	Detail                   []byte // the event's body, or what the handler chose
}

// ErrNoForwardBus is Forward without a bus to forward to.
var ErrNoForwardBus = errors.New("hookledger: Forward: no bus to forward to; deploy with the template parameter ForwardEventBus set to the bus's name, then replay the event")

// Forward publishes f (see Config.Forward); Event.Forward runs it inside
// its step.
func (r *Run) Forward(ctx context.Context, f Forwarded) (string, error) {
	if r == nil {
		return "", ErrNoEngine
	}
	if r.cfg.Forward == nil {
		return "", PermanentError{Err: ErrNoForwardBus}
	}
	return r.cfg.Forward(ctx, f)
}

// ExtendLease keeps the event's lease at least d more (see Config.Extend).
// A lost lease stops the run: no step may run after it.
func (r *Run) ExtendLease(ctx context.Context, d time.Duration) error {
	if r == nil {
		return ErrNoEngine
	}
	if r.cfg.Extend == nil {
		return nil
	}
	err := r.cfg.Extend(ctx, d)
	if errors.Is(err, ErrLeaseLost) {
		r.LoseLease(err)
	}
	return err
}

// LoseLease stops the run because the lease was lost outside a step write
// (an extension found another worker holding the event): no step runs
// after it, and the run writes nothing more.
func (r *Run) LoseLease(err error) {
	if r == nil || err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped == nil {
		r.stopped = err
	}
}

// Result returns the result of a step recorded done, by this attempt or an
// earlier one.
func (r *Run) Result(name string) (string, bool) {
	if r == nil {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.recorded[name]
	return st.Result, ok && st.Status == Done
}

// Indeterminate returns the step that made this event indeterminate, if any.
func (r *Run) Indeterminate() *IndeterminateError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.indet
}

// LastCheckError returns the last check that failed to answer, if any.
func (r *Run) LastCheckError() *CheckError {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastChk
}

// LeaseLost reports whether the run lost its lease: it must stop and write
// nothing more.
func (r *Run) LeaseLost() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped != nil && r.indet == nil
}

// Runs reports how often this attempt ran each step's function.
func (r *Run) Runs() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.runs))
	for k, v := range r.runs {
		out[k] = v
	}
	return out
}

// usageLocked lists the recorded steps by the space they take, largest
// first ("name N (name M + result R)"), the first few of them.
func (r *Run) usageLocked(except string) string {
	type use struct {
		name   string
		result int
	}
	var uses []use
	for name, st := range r.recorded {
		if name != except && st.Status != Clear {
			uses = append(uses, use{name, len(st.Result)})
		}
	}
	if len(uses) == 0 {
		return "no steps recorded"
	}
	sort.Slice(uses, func(i, j int) bool {
		a, b := len(uses[i].name)+uses[i].result, len(uses[j].name)+uses[j].result
		if a != b {
			return a > b
		}
		return uses[i].name < uses[j].name
	})
	const show = 4 // the cause is kept to 1 KB
	var parts []string
	for i, u := range uses {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(uses)-show))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d (name %d + result %d)", u.name, len(u.name)+u.result, len(u.name), u.result))
	}
	return strings.Join(parts, ", ")
}
