// Package engine runs one attempt of an event's handler: its named steps
// against durable state, its InOrder route's question, and the verdict at
// its end (Judge). The processor (state in the DynamoDB ledger) and
// hookledgertest (state in memory) both run it, so they keep exactly the
// same rules. It never imports package hookledger: that package adapts its
// Handler to the engine's at init (Install).
//
// The step rules:
//
//   - A step recorded done never runs again: Step returns its recorded
//     result.
//   - At-least-once (the default): the step's function runs, and its
//     completion is recorded in the ledger's next write. Before the next step
//     starts, pending completions are saved (one write), so a retry resumes
//     after the last completed step; the last step's completion rides on the
//     final write (Complete, Fail or Bury). A crash before that write makes a
//     retry run the step again, with the same downstream key.
//   - At-most-once: "started" is saved (one write, conditional on the lease,
//     carrying pending completions) before the function runs. A retry that
//     finds it started and not done never runs it blindly: it asks the
//     step's check. Done: the result is recorded and the step skipped. Not
//     done: the step runs. Unknown, or no check: the event is indeterminate
//     and goes dead (alarmed) for an operator to resolve.
//   - A check error other than "not done" or "indeterminate" is retryable,
//     a PermanentError included (a check that fails to answer is no
//     knowledge that the effect did not happen): the event fails and is
//     retried later; once its attempts are spent it goes dead as
//     indeterminate.
//   - The record stays small: step names and results together take at
//     most MaxTotalBytes per event. A step whose name does not fit is
//     refused before it runs (before any effect); a result that does not
//     fit, or is not valid UTF-8, fails the event after the effect ran.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hookledger/hookledger/ledger"
)

// Mode is a step's delivery guarantee.
type Mode int

// The two modes.
const (
	AtLeastOnce Mode = iota
	AtMostOnce
)

// Status is what the store says about a step.
type Status string

// Started and Done mirror the ledger's step statuses; Clear in a Change
// removes the entry.
const (
	Started Status = "started"
	Done    Status = "done"
	Clear   Status = ""
)

// State is a step's recorded state.
type State struct {
	Status Status
	Result string
}

// Change is one change to a step's recorded state.
type Change struct {
	Name   string
	Status Status
	Result string
}

// Check asks downstream whether a step's effect happened. It returns the
// step's result and nil when it did, an error wrapping ErrNotDone when it
// certainly did not, one wrapping ErrIndeterminate when it cannot tell, and
// any other error, a PermanentError included, when the question itself
// failed (retried later; indeterminate once the attempts are spent).
type Check func(ctx context.Context, key string) (string, error)

// Func is a step's effect. It gets the step's downstream idempotency key.
type Func func(ctx context.Context, key string) (string, error)

// Spec describes one step.
type Spec struct {
	Name  string
	Mode  Mode
	Check Check // optional
}

// Store persists step changes under the event's lease: one conditional
// write per call, failing with an error for which Store.LeaseLost reports
// true when the lease is gone.
type Store interface {
	Save(ctx context.Context, changes []Change) error
	LeaseLost(err error) bool
}

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

// Limits that keep the record under 1 KB (one write unit per status
// change): a step name is at most MaxNameBytes, a result at most
// MaxResultBytes, all of an event's step names and results together at most
// MaxTotalBytes, and an event has at most MaxSteps steps.
const (
	MaxNameBytes   = ledger.MaxStepName
	MaxResultBytes = 256
	MaxTotalBytes  = 512
	MaxSteps       = 16
)

// DefaultMaxAttempts is how many times a handler may fail an event before
// it is dead, unless the deployment says otherwise
// (HOOKLEDGER_MAX_ATTEMPTS): the processor and hookledgertest both count
// failures against it, so a test and the pipeline bury an event on the same
// failure.
const DefaultMaxAttempts = 5

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

// Config sets up a Run.
type Config struct {
	Store    Store
	Recorded map[string]State // what the store held at claim time
	Attempt  int              // 1 on the first run
	// Key derives a step's downstream idempotency key from its name.
	Key func(name string) string
	// Point is called at the named crash points (inject.Crash in the
	// processor, a simulated crash in hookledgertest); nil: none.
	Point func(point string)
	// Extend keeps the event's lease at least d more (ExtendLease); an
	// error wrapping ErrLeaseLost means another worker took it over. Nil:
	// the lease cannot be extended (ExtendLease then succeeds, as there is
	// no one to take the event over).
	Extend func(ctx context.Context, d time.Duration) error
	// Forward publishes a forwarded event and returns the bus's id of it
	// (the processor's EventBridge publisher, hookledgertest's record). Nil:
	// no bus to forward to, and Forward fails permanently saying so.
	Forward func(ctx context.Context, f Forwarded) (string, error)
	// Guard answers an InOrder route (nil: the route fails, ErrNoGuard).
	Guard Guard
}

// Forwarded is an event on its way to the forward bus (Event.Forward): the
// event's identity, the forward step's downstream key, and the detail.
type Forwarded struct {
	Source, Tenant, ID, Type string
	Key                      string // the forward step's downstream idempotency key
	Attempt                  int
	ReceivedAt               time.Time
	Detail                   []byte // the event's body, or what the handler chose
}

// ErrNoForwardBus is Forward without a bus to forward to.
var ErrNoForwardBus = errors.New("hookledger: Forward: no bus to forward to; deploy with the template parameter ForwardEventBus set to the bus's name, then replay the event")

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

// Run is one attempt of one event's handler.
type Run struct {
	cfg Config

	mu       sync.Mutex
	busy     bool
	recorded map[string]State
	pending  []Change
	seen     map[string]bool
	failed   map[string]bool // steps whose function or check failed in this run
	stopped  error           // a lease lost or an indeterminate step: nothing more may run
	indet    *IndeterminateError
	lastChk  *CheckError
	runs     map[string]int
	place    Place
}

// New starts a run.
func New(cfg Config) *Run {
	rec := make(map[string]State, len(cfg.Recorded))
	for k, v := range cfg.Recorded {
		rec[k] = v
	}
	return &Run{cfg: cfg, recorded: rec, seen: map[string]bool{}, failed: map[string]bool{}, runs: map[string]int{}}
}

func (r *Run) point(p string) {
	if r.cfg.Point != nil {
		r.cfg.Point(p)
	}
}

// StartedPoint and RanPoint name a step's crash points.
func StartedPoint(step string) string { return "step." + step + ".started" }

// RanPoint is hit right after a step's function returned, before anything
// about it is recorded.
func RanPoint(step string) string { return "step." + step + ".ran" }

// Step runs one step (see the package doc for the rules).
func (r *Run) Step(ctx context.Context, spec Spec, fn Func) (_ string, err error) {
	if r == nil {
		return "", ErrNoEngine
	}
	if err := r.enter(spec); err != nil {
		return "", err
	}
	defer func() { r.leave(spec.Name, err != nil) }()
	key := r.cfg.Key(spec.Name)
	st := r.state(spec.Name)
	if st.Status == Done {
		return st.Result, nil
	}
	if spec.Mode == AtMostOnce && st.Status == Started {
		// An earlier attempt began this step and did not record its end.
		if spec.Check == nil {
			return "", r.indeterminate(spec.Name, errors.New("it was started by an earlier attempt and has no check"))
		}
		res, err := spec.Check(ctx, key)
		switch {
		case err == nil:
			return r.complete(spec.Name, res)
		case errors.Is(err, ErrIndeterminate):
			return "", r.indeterminate(spec.Name, err)
		case !errors.Is(err, ErrNotDone):
			ce := &CheckError{Step: spec.Name, Err: err}
			r.mu.Lock()
			r.lastChk = ce
			r.mu.Unlock()
			return "", ce
		}
		// Certainly not done: run it; it is already marked started.
		if err := r.flush(ctx, nil); err != nil {
			return "", err
		}
	} else if spec.Mode == AtMostOnce {
		if err := r.flush(ctx, &Change{Name: spec.Name, Status: Started}); err != nil {
			return "", err
		}
		r.point(StartedPoint(spec.Name))
	} else {
		if err := r.flush(ctx, nil); err != nil {
			return "", err
		}
		if spec.Check != nil && r.cfg.Attempt > 1 {
			// A retry: the step may have run without its completion being
			// recorded. Ask before repeating it (at-least-once may repeat,
			// but need not).
			if res, err := spec.Check(ctx, key); err == nil {
				return r.complete(spec.Name, res)
			}
		}
	}
	r.mu.Lock()
	r.runs[spec.Name]++
	r.mu.Unlock()
	res, err := fn(ctx, key)
	r.point(RanPoint(spec.Name))
	if err != nil {
		if spec.Mode == AtMostOnce && errors.Is(err, ErrNotDone) {
			// The function says its effect did not happen: clear the mark
			// (in the next write) so a retry runs it without asking.
			r.mu.Lock()
			r.pending = append(r.pending, Change{Name: spec.Name, Status: Clear})
			r.recorded[spec.Name] = State{}
			r.mu.Unlock()
		}
		return "", err
	}
	return r.complete(spec.Name, res)
}

func (r *Run) enter(spec Spec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !ledger.ValidStepName(spec.Name) {
		return PermanentError{fmt.Errorf("step name %q: want %s", spec.Name, ledger.NameRule)}
	}
	if r.busy {
		return PermanentError{fmt.Errorf("step %s started while another step is running: run steps one after another", spec.Name)}
	}
	if r.seen[spec.Name] {
		if r.failed[spec.Name] {
			return PermanentError{fmt.Errorf("step %s called again after it failed in this run: return its error from the handler instead, and the pipeline retries the event (the step runs again then)", spec.Name)}
		}
		return PermanentError{fmt.Errorf("step %s run twice by one event: give each step its own name", spec.Name)}
	}
	if r.stopped != nil {
		return r.stopped
	}
	if len(r.seen) >= MaxSteps {
		return PermanentError{fmt.Errorf("step %s would be step %d of the event, over %d: run one step per batch of items, not one per item", spec.Name, len(r.seen)+1, MaxSteps)}
	}
	if st := r.recorded[spec.Name]; st.Status == Clear {
		// Not recorded yet: its name must fit in the record before its
		// effect runs.
		if used := r.usedLocked(""); used+len(spec.Name) > MaxTotalBytes {
			return PermanentError{fmt.Errorf("step %s: its name (%d bytes) does not fit: the event's step names and results already take %d of %d bytes; use shorter step names, return ids rather than documents, or fewer steps (one per batch, not one per item); taken by %s",
				spec.Name, len(spec.Name), used, MaxTotalBytes, r.usageLocked(""))}
		}
	}
	r.seen[spec.Name] = true
	r.busy = true
	return nil
}

// usedLocked is how many bytes the recorded steps' names and results take,
// leaving out the step called except.
func (r *Run) usedLocked(except string) int {
	n := 0
	for name, st := range r.recorded {
		if name != except && st.Status != Clear {
			n += len(name) + len(st.Result)
		}
	}
	return n
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

func (r *Run) leave(name string, failed bool) {
	r.mu.Lock()
	r.busy = false
	if failed {
		r.failed[name] = true
	}
	r.mu.Unlock()
}

func (r *Run) state(name string) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recorded[name]
}

// complete records a step done with its result, in the next write.
func (r *Run) complete(name, res string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(res) > MaxResultBytes {
		return "", PermanentError{fmt.Errorf("step %s returned a %d-byte result, over %d: return an id, not a document", name, len(res), MaxResultBytes)}
	}
	if !utf8.ValidString(res) {
		return "", PermanentError{fmt.Errorf("step %s returned a result that is not valid UTF-8 (%q): the ledger stores text; return an id, or encode bytes (hex, base64)", name, res)}
	}
	if used := r.usedLocked(name); used+len(name)+len(res) > MaxTotalBytes {
		return "", PermanentError{fmt.Errorf("step %s: its name and %d-byte result would bring the event's step names and results to %d bytes, over %d; use shorter step names, return ids rather than documents, or fewer steps (one per batch, not one per item); taken by %s",
			name, len(res), used+len(name)+len(res), MaxTotalBytes, r.usageLocked(name))}
	}
	r.pending = append(r.pending, Change{Name: name, Status: Done, Result: res})
	r.recorded[name] = State{Status: Done, Result: res}
	return res, nil
}

// flush saves pending changes, plus extra, in one write; nothing is written
// when there is nothing to save.
func (r *Run) flush(ctx context.Context, extra *Change) error {
	r.mu.Lock()
	changes := append([]Change(nil), r.pending...)
	r.mu.Unlock()
	if extra != nil {
		changes = append(changes, *extra)
	}
	if len(changes) == 0 {
		return nil
	}
	if err := r.cfg.Store.Save(ctx, changes); err != nil {
		if r.cfg.Store.LeaseLost(err) {
			r.mu.Lock()
			r.stopped = err
			r.mu.Unlock()
		}
		return err
	}
	r.mu.Lock()
	r.pending = r.pending[len(changes)-boolInt(extra != nil):]
	if extra != nil {
		r.recorded[extra.Name] = State{Status: extra.Status, Result: extra.Result}
	}
	r.mu.Unlock()
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (r *Run) indeterminate(name string, why error) error {
	e := &IndeterminateError{Step: name, Err: why}
	r.mu.Lock()
	r.indet = e
	r.stopped = e
	r.mu.Unlock()
	return e
}

// LoseLease stops the run because the event's lease was lost outside a
// step write (an extension found another worker holding the event): no
// step may run after it, and the run writes nothing more.
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

// Pending returns the changes not yet saved, for the run's final write.
func (r *Run) Pending() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Change(nil), r.pending...)
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

// LeaseLost reports whether a save found the lease gone: the run must stop
// and write nothing more.
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

// DownstreamKey is the downstream idempotency key of the step called step
// of the event (source, tenant, id): "hl_" and 40 hex digits of a SHA-256
// over the event's ledger key and the step's name. It never changes: keys
// of events already processed must stay the same.
func DownstreamKey(source, tenant, id, step string) string {
	h := sha256.New()
	h.Write([]byte(ledger.Key{Source: source, Tenant: tenant, ID: id}.PK()))
	h.Write([]byte{0})
	h.Write([]byte(step))
	return "hl_" + hex.EncodeToString(h.Sum(nil))[:40]
}
