//go:build upgrade

package upgrade

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/lab/crash"
	"github.com/hookledger/hookledger/lab/paystub"
	"github.com/hookledger/hookledger/ledger"
)

// How long the test waits for what it sets up, and for a stack to settle.
const (
	setupWait  = 90 * time.Second
	settleWait = 6 * time.Minute
	// trafficAfter is how many new events the traffic sends after the new
	// release took over, crashes armed, before the test waits to settle.
	trafficAfter = 40
)

// The crashes armed on the processor. heldSpec, while work is put in
// flight: right after an invoice's notification, and right after a
// subscription's update was applied (holding it). killSpec, once the next
// release runs: one process dies right after a charge, one right after a
// notification, each before the ledger recorded it.
const (
	heldSpec = "step.notify.ran,step.apply.ran"
	killSpec = "step.charge.ran,step.notify.ran"
)

// harness is the stack, the stubs that prove what it did, and the sender.
type harness struct {
	s     *stack
	stub  *paystub.Server
	send  *sender
	run   string // makes this run's event ids unique
	marks string // crash mark files
	cli   string // this tree's hookledger, for inspect
	n     atomic.Int64
	tr    *trafficRun // the traffic of the transition under way
	phase []*phaseReport
}

// phaseReport is what one transition did, for the summary.
type phaseReport struct {
	name, from, to string
	deploy         time.Duration
	settled        time.Duration
	inFlight       map[string]int // at the deploy: records by status, and messages on each queue
	crashes        []string       // crash points that fired
	refused        string         // the rollback's refusal at cold start, if any
}

// upgradeStack deploys prev, then upgrades to cur and rolls back to prev,
// each with work in flight, traffic and crashes, and proves every event's
// outcome after each.
func upgradeStack(t *testing.T, prev, cur release) {
	h := &harness{s: newStack(t, cur.Dir), stub: paystub.New(), send: newSender(), run: cli.RandomHex(4), marks: t.TempDir()}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", h.s.payments))
	if err != nil {
		t.Fatalf("payments stub on port %d (HOOKLEDGER_E2E_PAYMENTS_PORT): %v", h.s.payments, err)
	}
	srv := &http.Server{Handler: h.stub, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	h.cli = filepath.Join(t.TempDir(), "hookledger")
	if _, err := command(cur.Dir, nil, "go", "build", "-o", h.cli, "./cmd/hookledger"); err != nil {
		t.Fatal(err)
	}
	d := h.s.deploy(t, prev)
	fmt.Printf("upgrade: stack: release %s deployed in %s\n", prev, d.Round(time.Second))
	h.send.learn(h.s.out["WEBHOOK_URL"], h.s.out["SECRET"])
	h.send.fresh = h.s.secret
	fmt.Println("upgrade: while work is put in flight the reclaimer's schedule is paused, and from the queued cases on the event source too, " +
		"until the next release is deployed: it meets the work as it was left. Deliveries to the receiver go on throughout.")
	h.baseline(t)
	h.transition(t, "upgrade", prev, cur)
	h.reindex(t)
	h.transition(t, "rollback", cur, prev)
	h.summary(t)
}

// reindex takes the upgrade's step (CHANGELOG.md) and checks that list
// --status dead then shows every dead event, the earlier release's too.
func (h *harness) reindex(t *testing.T) {
	t.Helper()
	env := h.s.env("HOOKLEDGER_TABLE=" + h.s.out["TABLE"])
	out, err := command(h.s.root, env, h.cli, "reindex")
	if err != nil {
		t.Fatalf("hookledger reindex: %v", err)
	}
	fmt.Printf("upgrade: hookledger reindex: %s\n", strings.TrimSpace(out))
	list, err := command(h.s.root, env, h.cli, "list", "--status", "dead", "--limit", "0")
	if err != nil {
		t.Fatalf("hookledger list --status dead: %v", err)
	}
	dead := 0
	for _, e := range h.send.sent() {
		if rec, ok := h.record(t, e); ok && rec.Status == ledger.Dead {
			dead++
			if !strings.Contains(list, e.ID) {
				t.Errorf("dead event %s (%s) is not in list --status dead after reindex", e.ID, e.Kind)
			}
		}
	}
	if dead == 0 {
		t.Error("no dead event to look for: the in-flight cases should have left some")
	}
}

// baseline runs a few events through the previous release before anything
// is in flight: invoices (some delivered twice) and a subscription update.
func (h *harness) baseline(t *testing.T) {
	t.Helper()
	var evs []*event
	for i := range 8 {
		e := h.newInvoice("baseline", plain, "")
		h.mustDeliver(t, e, 1+i%2)
		evs = append(evs, e)
	}
	evs = append(evs, h.newUpdate(t, "baseline", "sub_baseline", 1))
	h.waitFor(t, "the baseline events to be done", setupWait, func() (bool, string) { return h.allTerminal(t, evs) })
}

// transition leaves work in flight under from, deploys to over it with
// traffic going, arms crashes, and proves the outcome once it settles. A
// to that refuses the table at cold start is proven to have refused and to
// have applied nothing; from is then deployed again to finish the work.
func (h *harness) transition(t *testing.T, phase string, from, to release) {
	t.Helper()
	rep := &phaseReport{name: phase, from: from.String(), to: to.String()}
	h.phase = append(h.phase, rep)
	c := h.inFlight(t, phase)
	rep.inFlight = h.snapshot(t, c)
	ctx, stop := context.WithCancel(t.Context())
	tr := h.traffic(ctx, phase)
	before := h.stub.Stats()
	rep.deploy = h.s.deploy(t, to)
	h.send.learn(h.s.out["WEBHOOK_URL"], h.s.out["SECRET"])
	if msg := h.s.refusal(t); msg != "" {
		rep.refused = msg
		h.refused(t, rep, msg, before)
		rep.deploy += h.s.deploy(t, from)
		h.send.learn(h.s.out["WEBHOOK_URL"], h.s.out["SECRET"])
	} else {
		fmt.Printf("upgrade: %s: release %s runs over the records %s wrote (no refusal at cold start)\n", phase, to, from)
	}
	start := time.Now()
	mark := filepath.Join(h.marks, phase+"-kill")
	h.resume(t, c, mark)
	h.waitFor(t, fmt.Sprintf("%d events of traffic after the deploy", trafficAfter), setupWait, func() (bool, string) {
		return tr.after.Load() >= trafficAfter, fmt.Sprintf("%d sent", tr.after.Load())
	})
	stop()
	tr.wg.Wait()
	if err := tr.err(); err != nil {
		t.Fatal(err)
	}
	h.settle(t, phase)
	rep.settled = time.Since(start)
	kills := crash.Fired(killSpec, mark)
	if len(kills) != strings.Count(killSpec, ",")+1 {
		t.Errorf("%s: of the crashes armed after the deploy (%s), only %v happened", phase, killSpec, kills)
	}
	rep.crashes = append(crash.Fired(heldSpec, filepath.Join(h.marks, phase+"-held")), kills...)
	h.verify(t, rep)
}

// trafficRun is the traffic of one transition.
type trafficRun struct {
	wg     sync.WaitGroup
	after  atomic.Int64 // events sent after resume
	resume atomic.Bool
	mu     sync.Mutex
	errs   []error
}

func (tr *trafficRun) err() error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return errors.Join(tr.errs...)
}

// traffic sends, until ctx ends, a new invoice or a duplicate of an earlier
// event (not one whose message the test removed: those come back below)
// every 200 ms, each delivered until answered.
func (h *harness) traffic(ctx context.Context, phase string) *trafficRun {
	tr := &trafficRun{}
	h.tr = tr
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 29))
	tr.wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			e := h.pickDuplicate(rng)
			if e == nil || rng.IntN(3) > 0 {
				e = h.newInvoice(phase, plain, "")
				if tr.resume.Load() {
					tr.after.Add(1)
				}
			}
			tr.wg.Go(func() {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
				defer cancel()
				if _, err := h.send.deliver(dctx, e); err != nil {
					tr.mu.Lock()
					tr.errs = append(tr.errs, err)
					tr.mu.Unlock()
				}
			})
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})
	return tr
}

// pickDuplicate is an earlier event to deliver again, or nil.
func (h *harness) pickDuplicate(rng *rand.Rand) *event {
	evs := h.send.sent()
	for range 5 {
		if len(evs) == 0 {
			return nil
		}
		if e := evs[rng.IntN(len(evs))]; e.Kind != noMessage && e.Kind != dlq && e.Kind != ordered {
			return e
		}
	}
	return nil
}

// newInvoice makes an invoice.paid event of the kind; customer "" is one
// of its own.
func (h *harness) newInvoice(phase string, k kind, customer string) *event {
	n := h.n.Add(1)
	id := fmt.Sprintf("evt_%s_%s_%s_%04d", h.run, phase, strings.ReplaceAll(string(k), "-", ""), n)
	if customer == "" {
		customer = "cus_" + id[4:]
	}
	return h.send.add(&event{ID: id, Kind: k, Phase: phase, Customer: customer, Body: invoice(id, customer, 1000+int(n))})
}

// newUpdate sends the seq-th update of sub and returns it.
func (h *harness) newUpdate(t *testing.T, phase, sub string, seq int) *event {
	t.Helper()
	id := fmt.Sprintf("evt_%s_%s_%s_%d", h.run, phase, sub, seq)
	e := h.send.add(&event{ID: id, Kind: ordered, Phase: phase, Sub: sub, Seq: seq, Body: update(id, sub, seq)})
	h.mustDeliver(t, e, 1)
	return e
}

// mustDeliver delivers e times times.
func (h *harness) mustDeliver(t *testing.T, e *event, times int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for range times {
		if _, err := h.send.deliver(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond every half second until it holds, or fails the test
// after d with cond's last word.
func (h *harness) waitFor(t *testing.T, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s: %s", d, what, detail)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// record reads e's record; ok false when there is none (yet).
func (h *harness) record(t *testing.T, e *event) (ledger.Record, bool) {
	t.Helper()
	rec, err := h.s.ledger.Get(t.Context(), key(e))
	if errors.Is(err, ledger.ErrNotFound) {
		return rec, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec, true
}

// allTerminal reports whether every event's record is done or dead.
func (h *harness) allTerminal(t *testing.T, evs []*event) (bool, string) {
	t.Helper()
	var open []string
	for _, e := range evs {
		if rec, ok := h.record(t, e); !ok || !rec.Status.Terminal() {
			open = append(open, fmt.Sprintf("%s (%s) %s", e.ID, e.Kind, rec.Status))
		}
	}
	if len(open) > 5 {
		open = append(open[:5], fmt.Sprintf("and %d more", len(open)-5))
	}
	return len(open) == 0, "not finished: " + strings.Join(open, ", ")
}

func key(e *event) ledger.Key { return ledger.Key{Source: "stripe", Tenant: "acme", ID: e.ID} }
