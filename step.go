package hookledger

import (
	"context"
	"fmt"
	"time"

	"github.com/hookledger/hookledger/internal/engine"
)

// StepOption configures one step: AtMostOnce, Check.
type StepOption struct{ apply func(*engine.Spec) }

// AtMostOnce makes a step at-most-once, for effects without downstream
// idempotency (e-mails, SMS, APIs without an idempotency key). The ledger
// records it started before fn runs. A retry that finds it started but not
// done asks its Check; without a definite answer the event goes dead as
// "indeterminate step NAME", for an operator to resolve (`hookledger
// replay --step NAME --mark-done` or `--rerun`).
func AtMostOnce() StepOption {
	return StepOption{func(s *engine.Spec) { s.Mode = engine.AtMostOnce }}
}

// CheckFunc asks downstream whether a step's effect already happened, by
// the step's downstream key (which fn should attach to the effect so it
// can be found). It returns the step's result and nil when it happened, an
// error wrapping ErrNotDone when it certainly did not, and one wrapping
// ErrIndeterminate when it cannot tell. Any other error, Permanent
// included, proves nothing: the step does not run, the event is retried,
// and once its attempts are spent it goes dead as indeterminate.
type CheckFunc func(ctx context.Context, key string) (string, error)

// Check gives a step its own downstream check. An at-most-once step asks it
// when a retry finds the step started but not done; an at-least-once step
// asks it on a retry, to skip a repeat known to be unnecessary.
func Check(fn CheckFunc) StepOption {
	return StepOption{func(s *engine.Spec) {
		if fn != nil {
			s.Check = engine.Check(fn)
		}
	}}
}

// StepResult returns the result of a step recorded done, by this run or an
// earlier one, and whether it is done.
func (e *Event) StepResult(name string) (string, bool) {
	return e.run.Result(name)
}

// ExtendLease keeps the event's lease for at least d more from now, for
// long handlers; the lease never ends earlier than before. A d that is not
// positive is a permanent error. An error wrapping ErrLeaseLost means
// another worker took the event over: stop, run no further step, and let
// its effects run alone.
func (e *Event) ExtendLease(ctx context.Context, d time.Duration) error {
	if e.run == nil {
		return engine.ErrNoEngine
	}
	if d <= 0 {
		return Permanent(fmt.Errorf("hookledger: ExtendLease(%v): the extension must be positive", d))
	}
	return e.run.ExtendLease(ctx, d)
}
