// Package engine runs one attempt of an event's handler: its named steps
// against durable state, its InOrder route's question, and the verdict at
// its end (Judge). The processor (the DynamoDB ledger) and hookledgertest
// (memory) both run it, so they keep the same rules. It never imports
// package hookledger, which adapts its Handler at init (Install).
//
// The step rules:
//
//   - A step recorded done never runs again: Step returns its result.
//   - At-least-once (the default): the function runs, and its completion
//     rides on the next write. Pending completions are saved before the
//     next step starts, so a retry resumes after the last completed step;
//     the last one rides on the final write (Complete, Fail or Bury). A
//     crash before that write runs the step again, with the same key.
//   - At-most-once: "started" is saved, under the lease, before the
//     function runs. A retry that finds it started and not done asks the
//     step's check: done, the result is recorded; not done, the step runs;
//     unknown, or no check, the event goes dead as indeterminate.
//   - A check that fails to answer, even with a PermanentError, proves
//     nothing: the event is retried, and goes dead as indeterminate once
//     its attempts are spent.
//   - The record stays small: step names and results take at most
//     MaxTotalBytes per event. A name that does not fit is refused before
//     any effect; a result that does not fit, or is not valid UTF-8, fails
//     the event after the effect ran.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	// Checked: done on its check's word; its function did not run.
	Checked bool
}

// Check asks downstream whether a step's effect happened: the result and
// nil when it did, ErrNotDone (wrapped) when it certainly did not,
// ErrIndeterminate when it cannot tell, any other error when the question
// failed.
type Check func(ctx context.Context, key string) (string, error)

// Func is a step's effect. It gets the step's downstream idempotency key.
type Func func(ctx context.Context, key string) (string, error)

// Spec describes one step.
type Spec struct {
	Name  string
	Mode  Mode
	Check Check // optional
}

// Store saves step changes under the event's lease, one conditional write
// per call. LeaseLost reports whether an error means the lease is gone.
type Store interface {
	Save(ctx context.Context, changes []Change) error
	LeaseLost(err error) bool
}

// Limits that keep the record under 1 KB, one write unit per status
// change: per name, per result, all names and results together, and steps
// per event.
const (
	MaxNameBytes   = ledger.MaxStepName
	MaxResultBytes = 256
	MaxTotalBytes  = 512
	MaxSteps       = 16
)

// Config sets up a Run.
type Config struct {
	Store    Store
	Recorded map[string]State // what the store held at claim time
	Attempt  int              // 1 on the first run
	// Key derives a step's downstream idempotency key from its name.
	Key func(name string) string
	// Point is called at the named crash points; nil: none.
	Point func(point string)
	// Extend keeps the lease at least d more; ErrLeaseLost (wrapped) means
	// another worker took the event over. Nil: ExtendLease succeeds, as no
	// one can take the event over.
	Extend func(ctx context.Context, d time.Duration) error
	// Forward publishes a forwarded event and returns the bus's id of it.
	// Nil: Forward fails permanently, saying there is no bus.
	Forward func(ctx context.Context, f Forwarded) (string, error)
	// Guard answers an InOrder route (nil: the route fails, ErrNoGuard).
	Guard Guard
	// Trace, when set, is told as each step begins (its name and downstream
	// key) and, through the function it returns, as it ends: whether its
	// function ran, and the step's error.
	Trace func(name, key string) func(ran bool, err error)
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
	if r.cfg.Trace != nil {
		end := r.cfg.Trace(spec.Name, key)
		defer func() { end(r.ran(spec.Name), err) }()
	}
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
			return r.completeChecked(spec.Name, res, true)
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
				return r.completeChecked(spec.Name, res, true)
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

func (r *Run) leave(name string, failed bool) {
	r.mu.Lock()
	r.busy = false
	if failed {
		r.failed[name] = true
	}
	r.mu.Unlock()
}

// ran reports whether the step's function ran in this run.
func (r *Run) ran(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[name] > 0
}

func (r *Run) state(name string) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recorded[name]
}

// complete records a step done with its result, in the next write.
func (r *Run) complete(name, res string) (string, error) { return r.completeChecked(name, res, false) }

// completeChecked is complete, saying whether a check answered for it.
func (r *Run) completeChecked(name, res string, checked bool) (string, error) {
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
	r.pending = append(r.pending, Change{Name: name, Status: Done, Result: res, Checked: checked})
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

// Pending returns the changes not yet saved, for the run's final write.
func (r *Run) Pending() []Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Change(nil), r.pending...)
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
