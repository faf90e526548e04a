// Package hookledgertest runs a hookledger handler against events in
// memory, with the pipeline's own step rules, so an effect can be tested
// without AWS. It simulates a crash after any step, counts how often each
// step's function ran, and keeps each event's steps between runs, so the
// run after a crash behaves as the pipeline's retry does.
//
//	tr := hookledgertest.New(handler)
//	ev := hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_1", Type: "invoice.paid", Body: body}
//	if res := tr.Run(ctx, ev, hookledgertest.CrashAfter("charge")); res.Status != hookledgertest.Crashed {
//		t.Fatal(res)
//	}
//	if res := tr.Run(ctx, ev); res.Status != hookledgertest.Done { // the retry
//		t.Fatal(res)
//	}
//	if n := tr.Runs("notify"); n != 1 {
//		t.Fatalf("notified %d times", n)
//	}
//
// The step engine is the processor's: what passes here passes in the
// pipeline, except what memory cannot show (DynamoDB, SQS, timing).
//
// InOrder routes keep their events in order here too: the tester keeps the
// newest position per source, tenant and resource. An older event run
// after a newer one is stale (Result.Order.Stale; status Stale when the
// route skips stale events). Runs of one resource at once take turns.
package hookledgertest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/forward"
)

// Status is the state an event is left in after a run.
type Status string

// The outcomes of a run.
const (
	Done      Status = "done"       // the handler succeeded; its steps are recorded done
	Failed    Status = "failed"     // a retryable error; the next Run is the retry
	Dead      Status = "dead"       // a permanent error, MaxAttempts failures, or an indeterminate step
	Crashed   Status = "crashed"    // the simulated crash happened; nothing after it was recorded
	LeaseLost Status = "lease_lost" // the simulated takeover happened; this run wrote nothing more
	// Stale: an InOrder route with SkipStale skipped the event, older than
	// one already run; final, like done.
	Stale Status = "stale"
)

// DefaultMaxAttempts is the pipeline's default (HOOKLEDGER_MAX_ATTEMPTS):
// the handler's DefaultMaxAttempts-th failure makes the event dead.
const DefaultMaxAttempts = engine.DefaultMaxAttempts

// Tester runs one handler. Safe for concurrent use across events.
type Tester struct {
	h hookledger.Handler
	// MaxAttempts bounds the handler's failures of an event, as
	// HOOKLEDGER_MAX_ATTEMPTS does (0: DefaultMaxAttempts). Crashed runs
	// and lost leases do not count: the pipeline bounds them by time.
	MaxAttempts int

	mu        sync.Mutex
	events    map[[3]string]*state
	runs      map[string]int
	orders    map[[3]string]*resource
	forwarded []Forwarded
}

// resource is the order of one (source, tenant, resource): the newest
// position, its event, and a lock its run holds until it returns.
type resource struct {
	taken  bool
	pos    int64
	holder string
	lock   chan struct{}
}

// Forwarded is an event a handler forwarded (Event.Forward), as the
// forward bus would receive it.
type Forwarded struct {
	// EventSource and DetailType are the EventBridge event's source
	// ("hookledger.SOURCE") and detail-type (the event's type).
	EventSource, DetailType string
	// Detail is the EventBridge detail: the event's identity
	// ("hookledger": source, tenant, event_id, type, key, attempt,
	// received_at) and the event itself ("event").
	Detail []byte
	// Key is the forward step's downstream idempotency key, which
	// consumers deduplicate on.
	Key string
}

type state struct {
	status      Status
	attempts    int // runs begun
	failures    int // runs the handler failed
	interrupted int // runs that crashed or lost their lease
	steps       map[string]engine.State
	cause       string
}

// New returns a tester for h. It panics on a nil handler, most often an
// unregistered route (Router.Lookup returned nil).
func New(h hookledger.Handler) *Tester {
	if h == nil {
		panic("hookledgertest: New(nil): no handler to test; if it came from Router.Lookup(source, type), no route matches that source and type (check the names registered with Handle)")
	}
	return &Tester{h: h, events: map[[3]string]*state{}, runs: map[string]int{}, orders: map[[3]string]*resource{}}
}

// Result is what one run did.
type Result struct {
	Status Status
	Err    error  // what the handler returned (nil when done)
	Cause  string // the cause recorded with failed or dead
	// Attempt is this run's Event.Attempt: 1, plus one for every earlier
	// run, failed or interrupted.
	Attempt int
	// Failures and Interrupted count the event's runs so far, this one
	// included: those the handler failed (bounded by MaxAttempts), and
	// those that crashed or lost their lease (not bounded by it).
	Failures    int
	Interrupted int
	Ran         map[string]int    // step functions run by this run
	Steps       map[string]string // step name -> "started" or "done: RESULT", as recorded after the run
	// Order is the event's place as its InOrder route judged it.
	Order hookledger.Order
}

func (r Result) String() string {
	return fmt.Sprintf("status %s, attempt %d (%d failed, %d interrupted), err %v, cause %q, ran %v, steps %v",
		r.Status, r.Attempt, r.Failures, r.Interrupted, r.Err, r.Cause, r.Ran, r.Steps)
}

// Option changes one run.
type Option struct{ apply func(*runConfig) }

type runConfig struct {
	crashAt   string
	passed    func(point string) // called at every crash point the run passes
	loseLease bool
}

// CrashAfter makes the run die right after the named step's function
// returned, before anything is recorded: the worst moment for an effect
// without downstream idempotency.
func CrashAfter(step string) Option {
	return Option{func(c *runConfig) { c.crashAt = engine.RanPoint(step) }}
}

// CrashAfterStart makes the run die after an at-most-once step was recorded
// started, before its function ran.
func CrashAfterStart(step string) Option {
	return Option{func(c *runConfig) { c.crashAt = engine.StartedPoint(step) }}
}

// LoseLease makes another worker take the event over before this run's
// first step write: the write fails, and the run must stop.
func LoseLease() Option { return Option{func(c *runConfig) { c.loseLease = true }} }

type crash struct{}

// Run runs the handler on ev as the pipeline's next attempt of that event
// (by source, tenant and ID). A done or dead event is not run again: the
// result reports its status, as a redelivery finds it. A retryable error
// counts toward MaxAttempts; a simulated crash or lost lease does not.
func (t *Tester) Run(ctx context.Context, ev hookledger.Event, opts ...Option) (res Result) {
	var cfg runConfig
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&cfg)
		}
	}
	st, attempt, recorded, over := t.begin(ev)
	if over != nil {
		return *over
	}
	guard := &memGuard{t: t, ev: ev}
	run := t.newRun(ev, cfg, st, attempt, recorded, guard)
	res.Attempt = attempt
	herr, crashed := t.call(ctx, engine.Event{Source: ev.Source, Tenant: ev.Tenant, ID: ev.ID, Type: ev.Type, Body: ev.Body,
		Attempt: attempt, ReceivedAt: ev.ReceivedAt}, run, &res.Order)
	guard.release()
	res.Ran = run.Runs()
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, n := range res.Ran {
		t.runs[name] += n
	}
	defer func() { res.Steps, res.Failures, res.Interrupted = render(st.steps), st.failures, st.interrupted }()
	res.Err = herr
	if crashed {
		res.Status = Crashed // nothing after the crash point is recorded
		st.interrupted++
		return res
	}
	t.judge(st, run, herr, cfg.loseLease, attempt, &res)
	return res
}

// begin starts the event's next attempt: its state, number and recorded
// steps. A done, dead or stale event is over: over is what a redelivery
// would find.
func (t *Tester) begin(ev hookledger.Event) (st *state, attempt int, recorded map[string]engine.State, over *Result) {
	k := [3]string{ev.Source, ev.Tenant, ev.ID}
	t.mu.Lock()
	defer t.mu.Unlock()
	st = t.events[k]
	if st == nil {
		st = &state{steps: map[string]engine.State{}}
		t.events[k] = st
	}
	if st.status == Done || st.status == Dead || st.status == Stale {
		return st, 0, nil, &Result{Status: st.status, Cause: st.cause, Attempt: st.attempts, Failures: st.failures, Interrupted: st.interrupted, Steps: render(st.steps)}
	}
	st.attempts++
	return st, st.attempts, copySteps(st.steps), nil
}

// newRun is the step engine for one attempt, in memory, with the crash
// point and lost lease cfg asks for.
func (t *Tester) newRun(ev hookledger.Event, cfg runConfig, st *state, attempt int, recorded map[string]engine.State, guard *memGuard) *engine.Run {
	store := &memStore{t: t, st: st, lose: cfg.loseLease}
	return engine.New(engine.Config{
		Store: store, Recorded: recorded, Attempt: attempt,
		Key: func(name string) string { return engine.DownstreamKey(ev.Source, ev.Tenant, ev.ID, name) },
		Point: func(p string) {
			if cfg.passed != nil {
				cfg.passed(p)
			}
			if p == cfg.crashAt {
				panic(crash{})
			}
		},
		Extend: func(context.Context, time.Duration) error {
			if store.lose {
				return fmt.Errorf("%w (simulated)", engine.ErrLeaseLost)
			}
			return nil
		},
		Forward: t.forward,
		Guard:   guard,
	})
}

// judge records how the attempt ended, as the processor's final write
// would, and says so in res. The caller holds t.mu.
func (t *Tester) judge(st *state, run *engine.Run, herr error, lost bool, attempt int, res *Result) {
	j := run.Judge(herr, st.failures, t.MaxAttempts, attempt)
	if lost {
		j.Verdict = engine.Abandon // the takeover makes this run's writes fail, the final one too
	}
	switch j.Verdict {
	case engine.Abandon:
		res.Status = LeaseLost
		st.interrupted++
		return
	case engine.GiveBack:
		res.Status = Failed // the resource stayed busy: retried, not a failure of the handler
		st.interrupted++
		return
	case engine.Skip:
		st.status, st.cause = Stale, j.Cause
		res.Status, res.Cause, res.Err = Stale, st.cause, nil
		return
	}
	apply(st.steps, run.Pending())
	if j.Failed() {
		st.failures++
	}
	switch j.Verdict {
	case engine.Complete:
		st.status, st.cause = Done, ""
	case engine.Bury:
		st.status, st.cause = Dead, j.Cause
	default:
		st.status, st.cause = Failed, j.Cause
	}
	res.Status, res.Cause = st.status, st.cause
}

// call runs the handler and reports the event's order; a simulated crash
// ends it, any other panic is the handler's error, as in the pipeline.
func (t *Tester) call(ctx context.Context, ev engine.Event, run *engine.Run, order *hookledger.Order) (err error, crashed bool) {
	h, err := engine.HandlerOf(hookledger.HandlerFunc(func(ctx context.Context, e *hookledger.Event) error {
		defer func() { *order = e.Order() }()
		return t.h.HandleEvent(ctx, e)
	}))
	if err != nil {
		return err, false
	}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(crash); ok {
				crashed = true
				return
			}
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return h.Run(ctx, ev, run), false
}

// forward records a forwarded event as the bus would receive it; each one
// counts, so a test sees the repeat a crash after the put makes.
func (t *Tester) forward(_ context.Context, f engine.Forwarded) (string, error) {
	src, dt, detail, err := forward.Build(f)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forwarded = append(t.forwarded, Forwarded{EventSource: src, DetailType: dt, Detail: detail, Key: f.Key})
	return fmt.Sprintf("forwarded-%d", len(t.forwarded)), nil
}

// Forwarded returns every event the handler forwarded, in order, over all
// runs. A crash between the put and the step's record shows the same key
// twice, which consumers drop.
func (t *Tester) Forwarded() []Forwarded {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Forwarded(nil), t.forwarded...)
}

// Runs reports how often the named step's function ran, over every run of
// every event this tester saw.
func (t *Tester) Runs(step string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs[step]
}

// Replay is the operator's replay of a dead or failed event (hookledger
// replay): back to its first attempt, its counts forgotten, with the step
// changes applied (MarkDone, Rerun).
func (t *Tester) Replay(ev hookledger.Event, changes ...StepChange) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.events[[3]string{ev.Source, ev.Tenant, ev.ID}]
	if st == nil || (st.status != Dead && st.status != Failed) {
		return fmt.Errorf("hookledgertest: replay %s/%s/%s: only dead or failed events can be replayed", ev.Source, ev.Tenant, ev.ID)
	}
	for _, c := range changes {
		apply(st.steps, []engine.Change{c.change})
	}
	st.status, st.attempts, st.failures, st.interrupted, st.cause = "", 0, 0, 0, ""
	return nil
}

// StepChange is an operator's resolution of one step, for Replay.
type StepChange struct{ change engine.Change }

// MarkDone records the step done with result, as `hookledger replay --step
// NAME --mark-done --result R` does.
func MarkDone(step, result string) StepChange {
	return StepChange{engine.Change{Name: step, Status: engine.Done, Result: result}}
}

// Rerun clears the step so it runs again, as `hookledger replay --step NAME
// --rerun` does.
func Rerun(step string) StepChange {
	return StepChange{engine.Change{Name: step, Status: engine.Clear}}
}

// memGuard is one run's order (engine.Guard), with the ledger's rules:
// older than another event's newest is stale, equal is a tie taken in
// turn, and the run holds the resource until it returns.
type memGuard struct {
	t    *Tester
	ev   hookledger.Event
	held *resource
}

func (g *memGuard) Take(ctx context.Context, k engine.OrderKey) (engine.Place, error) {
	if !k.OK {
		return engine.Place{}, nil
	}
	t := g.t
	key := [3]string{g.ev.Source, g.ev.Tenant, k.Resource}
	t.mu.Lock()
	r := t.orders[key]
	if r == nil {
		r = &resource{lock: make(chan struct{}, 1)}
		t.orders[key] = r
	}
	p, stale := g.judge(r, k)
	t.mu.Unlock()
	if stale {
		return p, nil // stale at once: no need to wait for the holder
	}
	select {
	case r.lock <- struct{}{}:
	case <-ctx.Done():
		return engine.Place{}, &engine.BusyError{Resource: k.Resource, Err: ctx.Err()}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, stale = g.judge(r, k); stale { // a newer event took it while this run waited
		<-r.lock
		return p, nil
	}
	g.held = r
	r.taken, r.pos, r.holder = true, k.Position, g.ev.ID
	return p, nil
}

// judge places k against r (under t.mu).
func (g *memGuard) judge(r *resource, k engine.OrderKey) (engine.Place, bool) {
	p := engine.Place{Resource: k.Resource, Position: k.Position}
	if !r.taken {
		return p, false
	}
	p.Known, p.Newest, p.NewestEvent = true, r.pos, r.holder
	if r.holder == g.ev.ID {
		return p, false
	}
	p.Stale, p.Tie = r.pos > k.Position, r.pos == k.Position
	return p, p.Stale
}

// release lets the next run of the resource in.
func (g *memGuard) release() {
	if g.held != nil {
		<-g.held.lock
		g.held = nil
	}
}

// memStore is the in-memory ledger of one event's steps.
type memStore struct {
	t    *Tester
	st   *state
	lose bool
}

func (m *memStore) Save(_ context.Context, changes []engine.Change) error {
	if m.lose {
		return fmt.Errorf("%w (simulated)", engine.ErrLeaseLost)
	}
	m.t.mu.Lock()
	apply(m.st.steps, changes)
	m.t.mu.Unlock()
	return nil
}

func (m *memStore) LeaseLost(err error) bool { return errors.Is(err, engine.ErrLeaseLost) }

func apply(dst map[string]engine.State, changes []engine.Change) {
	for _, c := range changes {
		if c.Status == engine.Clear {
			delete(dst, c.Name)
			continue
		}
		dst[c.Name] = engine.State{Status: c.Status, Result: c.Result}
	}
}

func copySteps(in map[string]engine.State) map[string]engine.State {
	out := make(map[string]engine.State, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func render(in map[string]engine.State) map[string]string {
	out := make(map[string]string, len(in))
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := in[k]
		if v.Status == engine.Done {
			out[k] = "done: " + v.Result
		} else {
			out[k] = string(v.Status)
		}
	}
	return out
}

// Scenario is one crash of EveryCrash: where the run died, the event it
// ran, how it ended after the pipeline's retries, and how often each
// step's function ran.
type Scenario struct {
	// Point is the crash point: step.NAME.ran (after the function
	// returned, before its completion was recorded) or step.NAME.started
	// (an at-most-once step recorded started); "" for no crash.
	Point string
	// Event is the event as run, its ID made unique to the scenario (ID +
	// "~" + Point), so each has its own state and downstream keys.
	Event hookledger.Event
	// Status is how the event ended: Done, or Dead when a step could not
	// be proven or the handler gave up.
	Status Status
	// Cause is the recorded cause when the event did not end done.
	Cause string
	// Ran counts each step function's runs over the crash and its retries:
	// 1 when the crash cost nothing, 2 when the step ran again.
	Ran map[string]int
	// Runs is how many times the handler ran, the crashed run included.
	Runs int
}

func (s Scenario) String() string {
	p := s.Point
	if p == "" {
		p = "no crash"
	}
	return fmt.Sprintf("%s: %s after %d runs, step functions ran %v, cause %q", p, s.Status, s.Runs, s.Ran, s.Cause)
}

// EveryCrash runs ev once without a crash, to find its steps, then once per
// crash point of every step: a run that dies there, then the pipeline's
// retries until the event is done or dead. The scenario without a crash
// comes first. Each runs under its own ID (Scenario.Event), so fakes can
// tell them apart:
//
//	for _, sc := range tr.EveryCrash(ctx, ev) {
//		if sc.Status != hookledgertest.Done || payments.Charges(sc.Event.IdempotencyKey("charge")) != 1 {
//			t.Error(sc)
//		}
//	}
func (t *Tester) EveryCrash(ctx context.Context, ev hookledger.Event) []Scenario {
	var points []string
	seen := map[string]bool{}
	clean := t.scenario(ctx, ev, "", func(p string) {
		if !seen[p] && strings.HasPrefix(p, "step.") {
			seen[p] = true
			points = append(points, p)
		}
	})
	out := []Scenario{clean}
	for _, p := range points {
		out = append(out, t.scenario(ctx, ev, p, nil))
	}
	return out
}

// scenario runs one crash scenario and its retries.
func (t *Tester) scenario(ctx context.Context, ev hookledger.Event, point string, passed func(string)) Scenario {
	e := ev
	e.ID = ev.ID + "~" + point
	if point == "" {
		e.ID = ev.ID + "~clean"
	}
	sc := Scenario{Point: point, Event: e, Ran: map[string]int{}}
	max := t.MaxAttempts
	if max <= 0 {
		max = DefaultMaxAttempts
	}
	first := Option{func(c *runConfig) { c.crashAt, c.passed = point, passed }}
	// A crash and then at most max failures end every event; the bound
	// only stops a handler that neither succeeds nor fails.
	for i := 0; i < max+2; i++ {
		var res Result
		if i == 0 {
			res = t.Run(ctx, e, first)
		} else {
			res = t.Run(ctx, e)
		}
		sc.Runs++
		for name, n := range res.Ran {
			sc.Ran[name] += n
		}
		sc.Status, sc.Cause = res.Status, res.Cause
		if res.Status == Done || res.Status == Dead || res.Status == Stale {
			break
		}
	}
	return sc
}

// IsPermanent reports whether err was marked with hookledger.Permanent, as
// the pipeline judges it: a run that returns it makes the event dead. The
// exception is a failed Check, which proves nothing: the event is retried,
// and goes dead as indeterminate once its attempts are spent.
func IsPermanent(err error) bool { return engine.IsPermanent(err) }
