package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"time"

	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/ledger"
)

// The interrupts phase kills the same events again and again: a handful of
// invoices whose process is killed (SIGKILL) in the middle of each of their
// first repeatKills runs, with effects that never fail, and half of them
// failing once, by their own effect, after that. Every such event must end
// done, charged once and notified once, and its record must count the kills
// as interrupted runs, not as failures: a kill is not the handler's doing,
// and used to spend its MaxAttempts (a failure after the fifth kill buried
// it) and its reclaims (five re-drives buried it).
//
// A kill takes down every run in the process, so a target's run can die of
// another target's kill before it reaches an effect request of its own:
// that too is one of its runs interrupted by a kill. The killer therefore
// goes by the count the ledger keeps (a kill is decided on the record's
// interrupted runs, read when the run makes its request), so that each
// target's first repeatKills runs end killed however the kills fall.
const (
	// repeatKills is how many runs of each target event are killed: more
	// than the handler's MaxAttempts and than the five reclaims that used to
	// bury an event.
	repeatKills = processor.DefaultMaxAttempts + 2
	// interruptTargets is how many events are killed that often.
	interruptTargets = 4
)

// target is one event the interrupts phase kills on its first runs.
type target struct {
	id       ledger.Key
	failOnce bool // after the kills, its next effect request fails (500)
	kills    int  // its own effect requests answered with a kill
	charged  bool // its charge was made (once, by a run then killed)
	failed   bool // the failure was answered
}

// targets are the phase's target events by key, shared by the killers of
// every process.
type targets struct {
	mu    sync.Mutex
	byKey map[string]*target
}

// decide says what to do with an effect request (a charge, or else a
// notification) of the target's run, the record counting interrupted runs
// so far, this one included, and the failures recorded: kill the run, and
// whether to make the effect first (forward), or fail it with a 500. The
// failure is asked for until the record counts it: a run answered 500 can
// still be killed before it records the failure (another target's kill
// takes down the whole process), and then it is an interrupted run.
func (tg *target) decide(charge bool, interrupted, failures int) (kill, forward, fail bool) {
	switch {
	case interrupted <= repeatKills:
		tg.kills++
		// Made, then killed, once each: the charge from half way, the
		// notification on the last kill (the retry's checks must find
		// them). Otherwise killed before the effect is made.
		switch {
		case charge && !tg.charged && interrupted >= repeatKills/2:
			tg.charged = true
			return true, true, false
		case !charge && interrupted == repeatKills && !tg.failOnce:
			return true, true, false
		}
		return true, false, false
	case tg.failOnce && failures == 0:
		tg.failed = true
		return false, false, true
	}
	return false, true, false
}

// killer stands in front of the payments and notification APIs for one dev
// process (each process is given its own address), so that it knows which
// process sent an effect request. On an effect request for a target event
// whose runs are not all killed yet it kills the process while the run
// waits for its answer: before the effect is made, or, once per event for
// the charge and once for the notification, just after it was made and
// before the answer (the run's check must then find it). The process never
// gets an answer; the supervisor starts it again.
type killer struct {
	next   http.Handler
	t      *targets
	fleet  *fleet
	ledger *ledger.Ledger // the harness's own view, without faults
	idx    int
}

func (k *killer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	charge := r.URL.Path == "/v1/charges"
	if r.Method != http.MethodPost || !charge && r.URL.Path != "/v1/notifications" {
		k.next.ServeHTTP(w, r)
		return
	}
	// The process that sent this request, as it is now: a kill must never
	// hit its next start.
	cmd, exited := k.fleet.current(k.idx)
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	var req struct {
		Event string `json:"event"`
	}
	json.Unmarshal(body, &req)
	r.Body = io.NopCloser(bytes.NewReader(body))

	k.t.mu.Lock()
	tg := k.t.byKey[req.Event]
	k.t.mu.Unlock()
	interrupted, failures := 0, 0
	if tg != nil {
		// The runs interrupted so far, this one included (its claim
		// counted it until its answer).
		rec, err := k.ledger.Get(r.Context(), tg.id)
		if err != nil {
			http.Error(w, "ledger unavailable to the harness", http.StatusServiceUnavailable)
			return
		}
		interrupted, failures = rec.Interrupted, rec.Failures
	}
	kill, forward, fail := false, true, false
	if tg != nil {
		k.t.mu.Lock()
		kill, forward, fail = tg.decide(charge, interrupted, failures)
		k.t.mu.Unlock()
	}

	switch {
	case fail:
		http.Error(w, `{"error":"unavailable; retry"}`, http.StatusInternalServerError)
	case kill:
		if forward {
			k.next.ServeHTTP(httptest.NewRecorder(), r)
		}
		k.fleet.kill(k.idx, cmd, exited)
		panic(http.ErrAbortHandler) // no answer: the connection closes
	default:
		k.next.ServeHTTP(w, r)
	}
}

// listenKillers starts one payments address per dev process of f, each
// behind its killer, and points each process at its own.
func (p *phase) listenKillers(payments http.Handler, f *fleet, n int) error {
	p.targets = &targets{byKey: map[string]*target{}} // filled by pickTargets
	urls := make([]string, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: &killer{next: payments, t: p.targets, fleet: f, ledger: p.l, idx: i}, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		p.onTeardown = append(p.onTeardown, func() { srv.Close() })
		urls[i] = "http://" + ln.Addr().String()
	}
	f.envOf = func(i int) []string { return []string{"PAYMENTS_URL=" + urls[i], "NOTIFY_URL=" + urls[i]} }
	return nil
}

// pickTargets makes the first interruptTargets invoices of the plan the
// phase's targets, every other one failing once after its kills.
func (p *phase) pickTargets() {
	p.targets.mu.Lock()
	defer p.targets.mu.Unlock()
	for _, ev := range p.events {
		if len(p.targets.byKey) == interruptTargets {
			break
		}
		if ev.kind == invoice {
			p.targets.byKey[ev.id.ID] = &target{id: ev.id, failOnce: len(p.targets.byKey)%2 == 1}
		}
	}
}

// checkTargets is the interrupts phase's oracle, on the records as they
// first settled (before the operator's replay could revive a dead one):
// every target's first repeatKills runs were killed (its record counts them
// as interrupted runs, and its own failure, for those made to fail once,
// as a failure), and it ended done. That each was charged and notified
// exactly once the general verdict checks.
func (p *phase) checkTargets(recs map[ledger.Key]ledger.Record) {
	if p.targets == nil {
		return
	}
	p.targets.mu.Lock()
	defer p.targets.mu.Unlock()
	keys := make([]string, 0, len(p.targets.byKey))
	for k := range p.targets.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		tg := p.targets.byKey[k]
		rec, ok := recs[tg.id]
		wantFailures := 0
		if tg.failOnce {
			wantFailures = 1
		}
		switch {
		case !ok:
			p.res.problem("%s (killed on its first %d runs): no record", tg.id, repeatKills)
			continue
		case tg.kills == 0:
			p.res.problem("%s: none of its effect requests was answered with a kill (did its runs reach an effect?)", tg.id)
		case tg.failOnce && !tg.failed:
			p.res.problem("%s: its effect was never made to fail", tg.id)
		}
		if rec.Status != ledger.Done {
			p.res.problem("%s, killed on its first %d runs with effects that did not fail, ended %s: %s", tg.id, repeatKills, rec.Status, rec.LastError)
		}
		if rec.Interrupted < repeatKills || rec.Failures < wantFailures {
			p.res.problem("%s: its record counts %d interrupted runs and %d failures, want at least %d and %d", tg.id, rec.Interrupted, rec.Failures, repeatKills, wantFailures)
		}
		then := ""
		if tg.failOnce {
			then = ", then failed once"
		}
		p.res.Notes = append(p.res.Notes, fmt.Sprintf("%s: %d runs killed (%d at its own effect request)%s: %s after %d runs (%d interrupted, %d failed), %d reclaims",
			tg.id.ID, rec.Interrupted, tg.kills, then, rec.Status, rec.Attempts, rec.Interrupted, rec.Failures, rec.Reclaims))
	}
}
