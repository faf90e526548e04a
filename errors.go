package hookledger

import "github.com/hookledger/hookledger/internal/engine"

// Errors a handler, a step or a check can return or test for.
var (
	// ErrNotDone says an effect certainly did not happen. A CheckFunc
	// returns it (wrapped) when the downstream has no trace of it. An
	// at-most-once step's function may return it (say, the request was
	// refused before it was sent), so a retry runs it without asking.
	ErrNotDone = engine.ErrNotDone
	// ErrIndeterminate says nobody can tell whether an effect happened. A
	// CheckFunc returns it when the downstream cannot answer for good; the
	// event goes dead as indeterminate.
	ErrIndeterminate = engine.ErrIndeterminate
	// ErrLeaseLost: another worker took the event over (this worker was
	// too slow or presumed dead). Stop; the other worker finishes.
	ErrLeaseLost = engine.ErrLeaseLost
)

// Permanent marks err as one that no retry can fix (a declined card, a body
// the handler cannot read): the event goes dead at once, alarmed and
// replayable.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return engine.PermanentError{Err: err}
}
