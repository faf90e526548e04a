package engine

import (
	"errors"
	"fmt"
)

// DefaultMaxAttempts is how many times a handler may fail an event before
// it is dead, unless the deployment says otherwise
// (HOOKLEDGER_MAX_ATTEMPTS): the processor and hookledgertest both count
// failures against it, so a test and the pipeline bury an event on the same
// failure.
const DefaultMaxAttempts = 5

// Verdict is what the end of one attempt asks of the event's record.
type Verdict int

// The verdicts, in the order Judge weighs them.
const (
	// Abandon: the lease was lost; the worker that took over finishes the
	// event, and this attempt writes nothing more.
	Abandon Verdict = iota
	// GiveBack: another event's run held the resource; the handler did not
	// run, and the event is retried later without spending an attempt.
	GiveBack
	// Skip: an InOrder route skipped the event as stale; it is done.
	Skip
	// Complete: the handler succeeded; the event is done.
	Complete
	// Bury: dead, alarmed, for an operator (a permanent error, the
	// MaxAttempts-th failure, or an indeterminate step).
	Bury
	// Retry: a retryable failure; the event is retried later.
	Retry
)

// Judgement is a verdict with its cause.
type Judgement struct {
	Verdict       Verdict
	Cause         string // for Bury and Retry: the record's last error
	Indeterminate bool   // a Bury whose cause is an unprovable step
	Err           error  // what the handler returned
}

// Judge weighs one attempt that ran to its end: err is what the handler
// returned, failures how many earlier attempts the handler failed, and
// attempts how many runs the event has begun, this one included.
func (r *Run) Judge(err error, failures, maxAttempts, attempts int) Judgement {
	j := Judgement{Err: err}
	if maxAttempts <= 0 {
		maxAttempts = DefaultMaxAttempts
	}
	pending := len(r.Pending()) > 0
	var busy *BusyError
	var stale *StaleError
	var ce *CheckError
	switch ind := r.Indeterminate(); {
	case r.LeaseLost():
		j.Verdict = Abandon
		if !errors.Is(err, ErrLeaseLost) {
			j.Err = fmt.Errorf("%w (the handler returned: %v)", ErrLeaseLost, err)
		}
	case ind != nil:
		j.Verdict, j.Cause, j.Indeterminate, j.Err = Bury, ind.Error(), true, ind
	case errors.As(err, &busy) && !pending:
		j.Verdict = GiveBack
	case errors.As(err, &stale) && !pending:
		j.Verdict, j.Cause = Skip, stale.Error()
	case err == nil:
		j.Verdict = Complete
	case IsPermanent(err):
		j.Verdict, j.Cause = Bury, err.Error()
	case failures+1 >= maxAttempts && errors.As(err, &ce):
		j.Verdict, j.Indeterminate = Bury, true
		j.Cause = (&IndeterminateError{Step: ce.Step, Err: fmt.Errorf("its check failed %d times: %w", failures+1, ce.Err)}).Error()
	case failures+1 >= maxAttempts:
		j.Verdict = Bury
		j.Cause = fmt.Sprintf("attempts exhausted: the handler failed %d times (at most %d; %d runs in all): %v", failures+1, maxAttempts, attempts, err)
	default:
		j.Verdict, j.Cause = Retry, err.Error()
	}
	return j
}

// Failed reports whether the verdict counts as a failure of the handler
// (toward MaxAttempts): a retry, or the burial that ends the event.
func (j Judgement) Failed() bool { return j.Verdict == Retry || j.Verdict == Bury }
