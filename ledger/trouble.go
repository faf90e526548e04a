package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// Fail records a retryable failure of the handler: status failed,
// failures+1, the run's interrupted count taken back (it did answer), the
// error text (trimmed to 1 KB; never put secrets in it) and the step
// changes. The reclaimer re-drives it retryAfter from now if SQS has not.
//
// A Fail that leaves a step started and not done keeps lease_until, and
// due_at no earlier. The downstream may still apply that step's request
// until the lease ends; a check asked before then could answer "not done"
// and the retry would send it again. Claim refuses the record until then.
// Any other Fail clears the lease, so an ordinary retry need not wait.
//
// Started steps are judged from lease.Record with the changes applied.
// Clearing the lease is conditioned on the record still being at
// lease.Record's version. A stale lease.Record costs a second write, judged
// from the stored record, never a cleared lease over a started step.
func (l *Ledger) Fail(ctx context.Context, lease Lease, cause string, retryAfter time.Duration, changes ...StepChange) (Record, error) {
	return l.fail(ctx, "fail", lease, cause, retryAfter, changes)
}

// Release gives a leased record back after a run the infrastructure cut
// short before the handler ran (the body unreadable, the resource busy).
// It is Fail, except that the run stays counted as interrupted and as given
// back (Record.GivenBack), and no failure counts against MaxAttempts.
func (l *Ledger) Release(ctx context.Context, lease Lease, cause string, retryAfter time.Duration, changes ...StepChange) (Record, error) {
	return l.fail(ctx, "release", lease, cause, retryAfter, changes)
}

// fail is Fail (op "fail") and Release (op "release").
func (l *Ledger) fail(ctx context.Context, op string, lease Lease, cause string, retryAfter time.Duration, changes []StepChange) (Record, error) {
	set := []string{"#st = :failed", "updated_at = :now", "last_error = :err", "due_shard = :shard", "due_at = :due"}
	if op == "fail" {
		set = append(set, failuresUp, interruptedDown)
	} else {
		set = append(set, givenBackUp) // still interrupted, and before the handler
	}
	for try := 0; ; try++ {
		now := l.now()
		// After two stale judgements (a reclaimer's Postpone moves the
		// version too) keep the lease: waiting for it is always safe.
		keep := try == 2 || leavesStarted(lease.Record.Steps, changes)
		due := now.Add(max(retryAfter, 0)) // never before the write (see notBefore)
		remove := []string{"lease_owner", "lease_until"}
		guard := ""
		if keep {
			remove = remove[:1]
			if due.Before(lease.Until) {
				due = lease.Until // the reclaimer has nothing to do before
			}
		} else {
			guard = "ver = :seen"
		}
		outcome := RunFailed
		if op == "release" {
			outcome = RunGivenBack
		}
		rec, err := l.owned(ctx, op, lease,
			parts(append([]string(nil), set...), remove,
				map[string]types.AttributeValue{
					":failed": dynamo.S(string(Failed)), ":err": dynamo.S(trim(cause)), ":seen": dynamo.N(lease.Record.Version),
					":shard": dynamo.N(int64(shardOf(lease.ID.PK(), l.opt.Shards))), ":due": dynamo.Millis(due),
				}).ending(outcome, cause), changes, guard)
		var se *StateError
		if guard != "" && errors.As(err, &se) && errors.Is(err, ErrLeaseLost) &&
			se.Record.Status == Processing && se.Record.LeaseOwner == lease.Token && se.Record.LeaseUntil.After(now) {
			// Only the version guard failed: the lease is still ours. Judge
			// again from the record as stored.
			lease.Record = se.Record
			continue
		}
		return rec, err
	}
}

// leavesStarted reports whether a step is started and not done once changes
// apply to steps (the last change per name wins, as in addSteps).
func leavesStarted(steps map[string]Step, changes []StepChange) bool {
	after := make(map[string]StepStatus, len(steps)+len(changes))
	for name, st := range steps {
		after[name] = st.Status
	}
	for _, c := range changes {
		after[c.Name] = c.Status
	}
	for _, st := range after {
		if st == StepStarted {
			return true
		}
	}
	return false
}

// Bury marks a leased record dead (a permanent error, attempts exhausted,
// a step that cannot be proven), with the step changes in the same write.
// It answers the run like Complete and counts a failure like Fail. Dead
// records are alarmed and replayable (Replay).
//
// Like Fail, a Bury that leaves a step started keeps the lease's end: an
// operator's replay must still wait for it before the step's check is
// asked.
func (l *Ledger) Bury(ctx context.Context, lease Lease, cause string, changes ...StepChange) (Record, error) {
	remove := []string{"lease_owner", "lease_until", "due_shard", "due_at"}
	if leavesStarted(lease.Record.Steps, changes) {
		remove = []string{"lease_owner", "due_shard", "due_at"}
	}
	return l.owned(ctx, "bury", lease,
		parts([]string{"#st = :dead", failuresUp, interruptedDown, "updated_at = :now", "last_error = :err", deadSet}, remove,
			map[string]types.AttributeValue{":dead": dynamo.S(string(Dead)), ":err": dynamo.S(trim(cause)),
				":deadshard": dynamo.N(int64(shardOf(lease.ID.PK(), l.opt.Shards)))}).ending(RunDead, cause), changes, "")
}

// Extend keeps a live lease for at least d more from now and returns the
// extended lease. Its end becomes the later of now+d and lease.Until, in
// one conditional write: an earlier end would let another worker take the
// event from one still running it.
func (l *Ledger) Extend(ctx context.Context, lease Lease, d time.Duration) (Lease, error) {
	if d <= 0 {
		return Lease{}, fmt.Errorf("%w: lease %v must be positive", ErrInvalid, d)
	}
	until := l.now().Add(d)
	if lease.Until.After(until) {
		until = lease.Until
	}
	rec, err := l.owned(ctx, "extend", lease,
		parts([]string{"lease_until = :until", "updated_at = :now"}, nil, map[string]types.AttributeValue{":until": dynamo.Millis(until)}), nil, "")
	if err != nil {
		return Lease{}, err
	}
	lease.Until, lease.Record = rec.LeaseUntil, rec
	return lease, nil
}

// trim cuts an error or reason to the 1 KB the record keeps of it.
func trim(s string) string { return trimTo(s, 1024) }

// EarlierRun says what the record shows of earlier runs that may have
// reached the handler, and so applied some effects: steps recorded, runs
// the handler failed, runs interrupted and not given back. "" when it
// shows none. A processing record's run in progress is not an earlier one.
func (r Record) EarlierRun() string {
	var what []string
	names := slices.Sorted(maps.Keys(r.Steps))
	for _, name := range names {
		what = append(what, fmt.Sprintf("step %s %s", name, r.Steps[name].Status))
	}
	if r.Failures > 0 {
		what = append(what, count(r.Failures, "run")+" failed by the handler")
	}
	n := r.Interrupted - r.GivenBack
	if r.Status == Processing {
		n--
	}
	if n > 0 {
		what = append(what, count(n, "run")+" interrupted")
	}
	return strings.Join(what, ", ")
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
