package reclaimer

import (
	"time"

	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/ledger"
)

// shardWalk is where a shard's walk stands: it reads entries due after its mark.
type shardWalk struct {
	shard    int
	mark     time.Time // where the walk started (the stored mark; zero: the oldest entry)
	cur      ledger.DueCursor
	pages    int               // pages read so far
	last     time.Time         // due time of the last entry of the last page handled
	held     time.Time         // earliest due time among the entries it left where they were
	complete bool              // it read the shard to the end
	terminal []ledger.DueEntry // entries it found terminal (see Handler.remember)
}

// settled is where the walk leaves the shard's mark: upTo when complete,
// else just before the last entry it handled (the next page may share its
// due time); always before every entry it held, and never back.
func (w shardWalk) settled(upTo time.Time) time.Time {
	m := w.mark
	switch {
	case w.complete:
		m = upTo
	case !w.last.IsZero():
		m = w.last.Add(-time.Millisecond)
	}
	if m.After(upTo) {
		m = upTo
	}
	if !w.held.IsZero() && !w.held.After(m) {
		m = w.held.Add(-time.Millisecond)
	}
	if m.Before(w.mark) {
		m = w.mark
	}
	return m
}

// upTo is the latest a shard's mark may move in this run.
func (r *run) upTo() time.Time {
	return r.start.Add(-fallback.Positive(r.h.Lag, DefaultLag))
}

// sawTerminal notes a terminal entry for the next run (Handler.remember):
// only one the next run reads again (after the cutoff), at most maxKnown.
func (r *run) sawTerminal(w *shardWalk, e ledger.DueEntry) {
	if e.At.After(r.cutoff) && r.noted.Add(1) <= maxKnown {
		w.terminal = append(w.terminal, e)
	}
}

// walks is every shard's walk as the run left it.
func (r *run) walks() []shardWalk {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(append([]shardWalk(nil), r.ended...), r.ready...)
}

// nextMarks is the marks the run leaves, and how many of them it moved.
func (r *run) nextMarks() (ledger.DueMarks, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	upTo := r.upTo()
	next := make(ledger.DueMarks, len(r.marks))
	for shard, t := range r.marks {
		next[shard] = t
	}
	moved := 0
	for _, w := range append(append([]shardWalk(nil), r.ended...), r.ready...) {
		if m := w.settled(upTo); m.After(w.mark) {
			next[w.shard] = m
			moved++
		}
	}
	return next, moved
}

// maxKnown bounds the entries one run leaves known to the next (about a
// minute of new events at 800 a second); the rest are read again.
const maxKnown = 50000

// remember keeps the terminal entries this process's next run will read
// again: only a replay, with a new due time, takes a record out of them.
func (h *Handler) remember(walks []shardWalk, marks ledger.DueMarks) {
	known := map[ledger.Key]time.Time{}
	for _, w := range walks {
		for _, e := range w.terminal {
			if e.At.After(marks[w.shard]) {
				known[e.ID] = e.At
			}
		}
	}
	h.mu.Lock()
	h.known = known
	h.mu.Unlock()
}

// takeKnown is what the last run in this process left known.
func (h *Handler) takeKnown() map[ledger.Key]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := h.known
	h.known = nil
	return k
}
