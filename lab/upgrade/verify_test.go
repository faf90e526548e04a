//go:build upgrade

package upgrade

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/lab/paystub"
	"github.com/hookledger/hookledger/ledger"
)

// settle waits until every event sent has a done or dead record and both
// queues are empty, saying how far it is every 30 s.
func (h *harness) settle(t *testing.T, phase string) {
	t.Helper()
	last := time.Now()
	h.waitFor(t, phase+": every event done or dead, the queue and the dead-letter queue empty", settleWait, func() (bool, string) {
		ok, detail := h.allTerminal(t, h.send.sent())
		for name, url := range map[string]string{"queue": h.s.out["QUEUE_URL"], "dead-letter queue": h.s.out["DLQ_URL"]} {
			n, err := h.s.depth(t.Context(), url)
			if err != nil || n > 0 {
				ok, detail = false, fmt.Sprintf("%s; %s: %d messages (%v)", detail, name, n, err)
			}
		}
		if !ok && time.Since(last) > 30*time.Second {
			last = time.Now()
			fmt.Printf("upgrade: %s: settling: %s\n", phase, detail)
		}
		return ok, detail
	})
}

// verify proves, from the stubs' logs and the ledger, every event sent so
// far: nothing charged or notified twice, none lost (each done, or dead
// where it must be), no budget overrun, run counts that add up, ordered
// updates applied in order; and inspect's runs line for one of each kind.
func (h *harness) verify(t *testing.T, rep *phaseReport) {
	t.Helper()
	st := h.stub.Stats()
	if tw := st.Twice(); len(tw) > 0 {
		t.Errorf("%s: charged twice or more: %v", rep.name, tw)
	}
	if tw := st.NotifiedTwice(); len(tw) > 0 {
		t.Errorf("%s: notified twice or more: %v", rep.name, tw)
	}
	for _, e := range h.send.sent() {
		rec, ok := h.record(t, e)
		if !ok {
			t.Errorf("%s: %s (%s, sent in %s) has no record: lost", rep.name, e.ID, e.Kind, e.Phase)
			continue
		}
		for _, problem := range judge(e, rec, st) {
			t.Errorf("%s: %s (%s, sent in %s): %s", rep.name, e.ID, e.Kind, e.Phase, problem)
		}
	}
	h.checkOrder(t, rep.name)
	h.inspect(t, rep.name, st)
}

// judge lists what is wrong with an event's end, by the stub's log and its
// record.
func judge(e *event, rec ledger.Record, st paystub.Stats) []string {
	var bad []string
	want := ledger.Done
	if e.Kind.mustDie() {
		want = ledger.Dead
	}
	if rec.Status != want {
		bad = append(bad, fmt.Sprintf("ended %s, want %s (last error %q)", rec.Status, want, rec.LastError))
	}
	if n, charged := st.PerEvent[e.ID], e.Kind.charged(); charged && n != 1 || !charged && n != 0 {
		bad = append(bad, fmt.Sprintf("charged %d times, want %d", n, map[bool]int{true: 1}[charged]))
	}
	if n := st.NotifiedEvents[e.ID]; e.Kind != ordered && n != map[bool]int{true: 1}[e.Kind.charged()] {
		bad = append(bad, fmt.Sprintf("notified %d times", n))
	}
	f, i, refused := rec.Failures, rec.Interrupted, st.Refused[e.ID]
	if refused < f || refused > f+i {
		bad = append(bad, fmt.Sprintf("the payments stub refused %d of its charges, but the ledger counts %d failed and %d interrupted runs", refused, f, i))
	}
	if refused-i > maxAttempts || f > maxAttempts {
		bad = append(bad, fmt.Sprintf("over its retry budget: %d charges refused, %d runs failed (HOOKLEDGER_MAX_ATTEMPTS=%d)", refused, f, maxAttempts))
	}
	switch {
	case e.Kind == exhausted && f != maxAttempts:
		bad = append(bad, fmt.Sprintf("dead after %d failed runs, want %d (HOOKLEDGER_MAX_ATTEMPTS)", f, maxAttempts))
	case e.Kind == failed && refused != failureFor[failed].Times:
		bad = append(bad, fmt.Sprintf("the payments stub refused %d of its charges, want %d", refused, failureFor[failed].Times))
	}
	if answered := map[ledger.Status]int{ledger.Done: 1}[rec.Status]; rec.Attempts != f+i+answered {
		bad = append(bad, fmt.Sprintf("%d runs begun, but %d failed + %d interrupted + %d completed", rec.Attempts, f, i, answered))
	}
	return bad
}

// checkOrder proves each subscription's updates were applied in order, by
// the notification stub's log: each at most once, never an older after a
// newer, and the newest sent applied last.
func (h *harness) checkOrder(t *testing.T, phase string) {
	t.Helper()
	seqOf, newest := map[string]int{}, map[string]int{}
	for _, e := range h.send.sent() {
		if e.Kind == ordered {
			seqOf[e.ID], newest[e.Sub] = e.Seq, max(newest[e.Sub], e.Seq)
		}
	}
	applied := map[string][]int{}
	for _, n := range h.stub.Notifications("") {
		if seq, ok := seqOf[n.Event]; ok {
			applied[n.To] = append(applied[n.To], seq)
		}
	}
	for sub, top := range newest {
		seqs := applied[sub]
		if len(seqs) == 0 || seqs[len(seqs)-1] != top || !slices.IsSorted(seqs) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
			t.Errorf("%s: %s's updates were applied in the order %v; want increasing, each once, ending with the newest sent, %d", phase, sub, seqs, top)
		}
	}
}

// runsRe reads inspect's runs line.
var runsRe = regexp.MustCompile(`^(\d+) runs? begun: (\d+) runs? failed by the handler .*?, (\d+) runs? interrupted`)

// inspect runs this tree's hookledger inspect on the first event of each
// kind the phase sent, and checks its runs line against the record and
// the payments stub's refusals.
func (h *harness) inspect(t *testing.T, phase string, st paystub.Stats) {
	t.Helper()
	seen := map[kind]bool{}
	var said []string
	env := h.s.env("HOOKLEDGER_TABLE=" + h.s.out["TABLE"])
	for _, e := range h.send.sent() {
		if e.Phase != phase || seen[e.Kind] {
			continue
		}
		seen[e.Kind] = true
		out, err := command(h.s.root, env, h.cli, "inspect", "--source", "stripe", "--tenant", "acme", e.ID)
		if err != nil {
			t.Errorf("%s: inspect %s: %v", phase, e.ID, err)
			continue
		}
		var got struct {
			Record ledger.Record `json:"record"`
			Runs   string        `json:"runs"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Errorf("%s: inspect %s printed no record: %v\n%s", phase, e.ID, err, out)
			continue
		}
		m := runsRe.FindStringSubmatch(got.Runs)
		rec, _ := h.record(t, e)
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		switch {
		case m == nil:
			t.Errorf("%s: inspect %s: runs line %q does not say runs begun, failed and interrupted", phase, e.ID, got.Runs)
		case n(1) != rec.Attempts || n(2) != rec.Failures || n(3) != rec.Interrupted:
			t.Errorf("%s: inspect %s says %q; the record has %d begun, %d failed, %d interrupted", phase, e.ID, got.Runs, rec.Attempts, rec.Failures, rec.Interrupted)
		case st.Refused[e.ID] < n(2) || st.Refused[e.ID] > n(2)+n(3):
			t.Errorf("%s: inspect %s says %q, but the payments stub refused %d of its charges", phase, e.ID, got.Runs, st.Refused[e.ID])
		default:
			said = append(said, fmt.Sprintf("%s %d/%d/%d (stub: %d refused)", e.Kind, n(1), n(2), n(3), st.Refused[e.ID]))
		}
	}
	fmt.Printf("upgrade: %s: hookledger inspect, runs begun/failed/interrupted: %s\n", phase, strings.Join(said, ", "))
	if len(seen) < len(kinds) {
		var missing []string
		for _, k := range kinds {
			if !seen[k] {
				missing = append(missing, string(k))
			}
		}
		t.Errorf("%s: no event of kinds %s to inspect", phase, strings.Join(missing, ", "))
	}
}
