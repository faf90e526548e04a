package reclaimer

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/ledger"
)

// run is one invocation's state, shared by its workers.
type run struct {
	h     *Handler
	ctx   context.Context
	chain int
	start time.Time // by the handler's clock
	wall  time.Time // by the wall clock
	end   time.Time // when the budget is spent (zero: no deadline)
	pace  *pacer
	limit int

	mu      sync.Mutex
	rep     Report
	ready   []shardWalk // shards with more due records, in turn
	ended   []shardWalk // shards whose walk reached the end or failed
	backlog bool        // a shard still had due records when the run stopped
	failed  int         // shards whose walk failed
	stop    string      // why the run stops early ("" while it goes on)
	errs    int         // shards stopped on errors
	marks   ledger.DueMarks
	known   map[ledger.Key]time.Time // what the run before found terminal (read only)
	cutoff  time.Time                // upTo(): entries after it are noted for the next run
	noted   atomic.Int64             // entries noted (sawTerminal)
}

func (h *Handler) newRun(ctx context.Context, in Input, marks ledger.DueMarks) *run {
	r := &run{h: h, ctx: ctx, chain: in.Chain, start: h.now(), wall: time.Now(), limit: fallback.Positive(h.PerShard, DefaultPerShard), marks: marks, known: h.takeKnown()}
	r.cutoff = r.upTo()
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		r.end = r.start.Add(left - min(fallback.Positive(h.Margin, DefaultMargin), left/4))
	}
	if h.MaxQueue >= 0 {
		r.pace = &pacer{max: cmp.Or(h.MaxQueue, DefaultMaxQueue), read: h.Queue.Depth, now: h.now}
	}
	for s := range h.Ledger.Shards() {
		r.ready = append(r.ready, shardWalk{shard: s, mark: marks[s]})
	}
	return r
}

// work runs the workers until every shard is drained or the run stops.
func (r *run) work() {
	workers := min(fallback.Positive(r.h.Workers, DefaultWorkers), len(r.ready))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(r.worker)
	}
	wg.Wait()
}

// next hands out the shard whose turn it is, or false when the run is over.
func (r *run) next() (shardWalk, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ready) == 0 {
		return shardWalk{}, false
	}
	if r.stop == "" {
		switch {
		case r.ctx.Err() != nil:
			r.stop = StopCanceled
		case !r.end.IsZero() && !r.h.now().Before(r.end):
			r.stop = StopBudget
		}
	}
	if r.stop != "" {
		r.backlog = true // shards still in turn have due records left
		return shardWalk{}, false
	}
	w := r.ready[0]
	r.ready = r.ready[1:]
	return w, true
}

func (r *run) worker() {
	for {
		w, ok := r.next()
		if !ok {
			return
		}
		if r.pace != nil {
			waited, ok, err := r.pace.admit(r.ctx, r.limit, r.end)
			r.mu.Lock()
			r.rep.PacedMS += waited.Milliseconds()
			r.mu.Unlock()
			if err != nil {
				r.h.logger().WarnContext(r.ctx, "queue depth unknown; not re-driving into it this run", "error", err.Error())
				r.giveBack(w, StopQueueDown)
				continue
			}
			if !ok && r.ctx.Err() != nil {
				r.giveBack(w, StopCanceled)
				continue
			}
			if !ok {
				r.giveBack(w, StopPaced) // the queue stayed full until the budget was spent
				continue
			}
		}
		var rep Report
		next, err := r.page(&w, &rep)
		if r.pace != nil {
			r.pace.release(r.limit, rep.Redriven())
		}
		r.mu.Lock()
		r.rep.add(rep)
		switch {
		case err != nil && w.pages == 0:
			r.failed++ // the shard's first query failed
			r.errs++
			r.ended = append(r.ended, w)
		case err != nil:
			r.errs++
			r.ended = append(r.ended, w)
		case !next.Done():
			w.cur, w.pages = next, w.pages+1
			r.ready = append(r.ready, w)
		default:
			w.complete = true
			r.ended = append(r.ended, w)
		}
		r.mu.Unlock()
		if err != nil {
			r.h.logger().ErrorContext(r.ctx, "reclaim shard failed", "shard", w.shard, "error", err.Error())
		}
	}
}

// giveBack stops the run for why and puts the shard back untouched, for the next run.
func (r *run) giveBack(w shardWalk, why string) {
	r.mu.Lock()
	r.ready = append(r.ready, w)
	r.stop = cmp.Or(r.stop, why)
	r.mu.Unlock()
}

func (r *run) report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := r.rep
	rep.Chain = r.chain
	rep.Backlog = r.backlog || len(r.ready) > 0
	switch {
	case r.stop != "":
		rep.Stopped = r.stop
	case r.errs > 0:
		rep.Stopped = StopShardErrors
	default:
		rep.Stopped = StopDrained
	}
	rep.RunMS = time.Since(r.wall).Milliseconds()
	return rep
}

// page handles the next page of one shard's due records and returns where
// the walk goes on. It reads the records eventually consistently first (half
// the price): done ones pass on that word (ledger.Peek), the others are read
// again, consistently. It records in w how far the page took the walk and
// which entries it held.
func (r *run) page(w *shardWalk, rep *Report) (ledger.DueCursor, error) {
	h, ctx := r.h, r.ctx
	now := h.now()
	entries, next, err := h.Ledger.DueAfter(ctx, w.shard, w.mark, now, r.limit, w.cur)
	if err != nil {
		return next, err
	}
	rep.Pages++
	if len(entries) == 0 {
		return next, nil
	}
	ids := make([]ledger.Key, 0, len(entries))
	at := make(map[ledger.Key]time.Time, len(entries))
	for _, e := range entries {
		at[e.ID] = e.At
		if t, ok := r.known[e.ID]; ok && t.Equal(e.At) {
			rep.Scanned++
			rep.Skipped++
			rep.Known++
			r.sawTerminal(w, e)
			continue
		}
		ids = append(ids, e.ID)
	}
	peeked, recs, readErr := r.read(w.shard, ids)
	var drive []ledger.Record
	for _, id := range ids {
		rep.Scanned++
		if p, ok := peeked[id]; ok && p.Status.Terminal() {
			rep.Skipped++ // done (or dead): nothing to recover
			r.sawTerminal(w, ledger.DueEntry{ID: id, At: at[id]})
			continue
		}
		rec, ok := recs[id]
		switch {
		case !ok && readErr != nil:
			rep.Errors++
			rep.hold(id)
		case !ok:
			rep.Skipped++ // expired; TTL will remove the index entry
		case rec.Status.Terminal():
			rep.Skipped++
			r.sawTerminal(w, ledger.DueEntry{ID: id, At: at[id]})
		case rec.DueAt.IsZero() || rec.DueAt.After(now):
			rep.Skipped++ // due later: the index lagged behind the table
		default:
			if d, err := h.decide(ctx, rec, now, rep); err != nil {
				h.count(ctx, rec, err, rep)
			} else if d {
				drive = append(drive, rec)
			}
		}
	}
	if len(drive) > 0 {
		h.redrive(ctx, drive, now, r.pace != nil && r.pace.wasIdle(), rep)
	}
	w.last = entries[len(entries)-1].At
	for id := range rep.held {
		if t := at[id]; w.held.IsZero() || t.Before(w.held) {
			w.held = t
		}
	}
	return next, nil
}

// read reads a page's records with Peek, then consistently those not terminal.
func (r *run) read(shard int, ids []ledger.Key) (peeked, recs map[ledger.Key]ledger.Record, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	peeked, _ = r.h.Ledger.Peek(r.ctx, ids) // a record it lacks is read again below
	var again []ledger.Key
	for _, id := range ids {
		if p, ok := peeked[id]; !ok || !p.Status.Terminal() {
			again = append(again, id)
		}
	}
	if len(again) > 0 {
		recs, err = r.h.Ledger.GetMany(r.ctx, again)
		if err != nil {
			r.h.logger().WarnContext(r.ctx, "reclaim: some records could not be read; they wait for the next run", "shard", shard, "error", err.Error())
		}
	}
	return peeked, recs, err
}
