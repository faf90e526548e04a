//go:build upgrade

package upgrade

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

// tally is what the events of one kind in one phase came to.
type tally struct {
	sent, done, dead, charged, notified, begun, failed, interrupted, refused int
}

// summary prints, per phase and kind, the events and what the stubs and
// the ledger say of them; then each transition's deploy and its in-flight
// work, and the traffic.
func (h *harness) summary(t *testing.T) {
	t.Helper()
	st := h.stub.Stats()
	rows := map[string]map[kind]*tally{}
	for _, e := range h.send.sent() {
		rec, _ := h.record(t, e)
		if rows[e.Phase] == nil {
			rows[e.Phase] = map[kind]*tally{}
		}
		r := rows[e.Phase][e.Kind]
		if r == nil {
			r = &tally{}
			rows[e.Phase][e.Kind] = r
		}
		r.sent++
		r.done += map[bool]int{true: 1}[rec.Status == ledger.Done]
		r.dead += map[bool]int{true: 1}[rec.Status == ledger.Dead]
		r.charged += st.PerEvent[e.ID]
		r.notified += st.NotifiedEvents[e.ID]
		r.begun, r.failed, r.interrupted, r.refused = r.begun+rec.Attempts, r.failed+rec.Failures, r.interrupted+rec.Interrupted, r.refused+st.Refused[e.ID]
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "phase\tkind\tevents\tdone\tdead\tcharges\tnotifications\trefused charges\truns begun\tfailed\tinterrupted\t")
	for _, phase := range []string{"baseline", "upgrade", "rollback"} {
		for _, k := range kinds {
			if r := rows[phase][k]; r != nil {
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", phase, k, r.sent, r.done, r.dead, r.charged, r.notified, r.refused, r.begun, r.failed, r.interrupted)
			}
		}
	}
	fmt.Println("\nupgrade: summary (payments and notification stubs' logs, the ledger's records)")
	w.Flush()
	for _, p := range h.phase {
		fmt.Printf("upgrade: %s %s -> %s: deployed in %s, settled %s later; at the deploy, records by status and messages by queue: %s; crashes: %s\n",
			p.name, p.from, p.to, p.deploy.Round(time.Second), p.settled.Round(time.Second), counts(p.inFlight), strings.Join(p.crashes, ", "))
		if p.refused != "" {
			fmt.Printf("upgrade: %s: refused at cold start: %s\n", p.name, p.refused)
		}
	}
	h.send.mu.Lock()
	fmt.Printf("upgrade: deliveries answered 2xx: %s; sent again after another answer: %s\n", counts(h.send.answers), counts(h.send.again))
	h.send.mu.Unlock()
	fmt.Printf("upgrade: payments stub: %d charges from %d requests (%d answered from an earlier charge); %d notifications; charged twice %d, notified twice %d\n",
		st.Charges, st.Requests, st.Replays, st.Notifications, len(st.Twice()), len(st.NotifiedTwice()))
}

// counts prints a map of counts as "k n, ..." in key order.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range slices.Compact(keys) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
