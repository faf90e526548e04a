package engine

import (
	"errors"
	"fmt"
)

// Sentinels.
var (
	// ErrNotDone: the effect certainly did not happen. A check returns it;
	// a step's function may return it (wrapped) to say its effect did not
	// happen, so a retry runs it without asking.
	ErrNotDone = errors.New("effect did not happen")
	// ErrIndeterminate: nobody can tell whether the effect happened.
	ErrIndeterminate = errors.New("cannot tell whether the effect happened")
	// ErrLeaseLost: another worker took the event over (this worker was
	// too slow or presumed dead). Stop; the other worker finishes.
	ErrLeaseLost = errors.New("hookledger: lease lost to another worker")
	// ErrNoEngine: Step was called on an event that is not being processed.
	ErrNoEngine = errors.New("hookledger: Step needs an event handed over by the processor or hookledgertest")
)

// IndeterminateError is the failure of an at-most-once step that was
// started and whose outcome nobody can prove: the event goes dead with
// cause "indeterminate step NAME".
type IndeterminateError struct {
	Step string
	Err  error // why (no check, the check said so, the check kept failing)
}

func (e *IndeterminateError) Error() string {
	return fmt.Sprintf("indeterminate step %s: %v", e.Step, e.Err)
}

func (e *IndeterminateError) Unwrap() error { return ErrIndeterminate }

// CheckError is a check that failed to answer; the event is retried, and
// once its attempts are spent it is indeterminate. It unwraps to the
// check's error, but a PermanentError in it does not make the event
// permanent (see IsPermanent).
type CheckError struct {
	Step string
	Err  error
}

func (e *CheckError) Error() string { return fmt.Sprintf("check of step %s failed: %v", e.Step, e.Err) }
func (e *CheckError) Unwrap() error { return e.Err }

// PermanentError marks an error no retry can fix.
type PermanentError struct{ Err error }

func (p PermanentError) Error() string { return "permanent: " + p.Err.Error() }
func (p PermanentError) Unwrap() error { return p.Err }

// IsPermanent reports whether err carries a PermanentError outside any
// CheckError: a check that failed, even for good, says nothing about
// whether the effect happened, so it never makes the event permanent.
func IsPermanent(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *CheckError:
		return false
	case PermanentError, *PermanentError:
		return true
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			if IsPermanent(x) {
				return true
			}
		}
		return false
	case interface{ Unwrap() error }:
		return IsPermanent(e.Unwrap())
	}
	return false
}
