// Package reclaimer is the reclaimer Lambda's handler: on a schedule it
// finds overdue records through the ledger's sparse due index and recovers
// them — re-enqueues received and failed records, resets expired leases to
// received and re-enqueues them (the event's recorded steps decide, at the
// retry, what already happened), and marks dead what could not be done in
// the time its record leaves (GiveUpAt). Every action is one conditional
// write, so two reclaimers never both act on one record.
//
// A run scales with the backlog: it walks the shards in parallel, a page of
// due records at a time (one Query, one BatchGetItem for the records, one
// for the payloads, one conditional write per record, one SendMessageBatch
// per ten messages), keeps going while shards return full pages until its
// time budget (the invocation's deadline less a margin) is spent, paces
// itself by the queue's depth so that new events never wait behind more
// than a bounded number of re-driven ones, and, when the budget ran out
// with a backlog left, starts the next run at once (a continuation) instead
// of waiting for the next schedule tick, a bounded number of times.
//
// The due index keeps done records (see package ledger), so a run reads
// each shard only from the mark the last run left there (ledger.DueMarks)
// up to now: an entry is read about once, when it falls due, and a done
// record costs half a read unit instead of the write its removal would.
// The mark moves only past what the run settled: entries of records that
// were terminal or were given a later due time. It stops before the first
// entry the run held (an error, or a conflict: a worker's claim leaves the
// due time where it was, and the worker may die), before the rest of a
// shard the run did not finish, and a lag (Handler.Lag) behind the run's
// start, so that the next run reads again what the eventually consistent
// index may have shown late. A mark that is too early costs reads; none is
// ever too late, because every write that gives a record a due time gives
// it one at or after the write. The entries the next run reads again that
// this one found terminal cost no second read when the next run is in the
// same process (a warm Lambda container): it passes them on this run's word
// (Report.Known), as it passes a peek's (see ledger.Peek).
package reclaimer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// store is the slice of the ledger the reclaimer calls.
type store interface {
	Shards() int
	DueAfter(ctx context.Context, shard int, after, upTo time.Time, limit int, from ledger.DueCursor) ([]ledger.DueEntry, ledger.DueCursor, error)
	ReadDueMarks(ctx context.Context) (ledger.DueMarks, error)
	SaveDueMarks(ctx context.Context, marks ledger.DueMarks) error
	Peek(ctx context.Context, ids []ledger.ID) (map[ledger.ID]ledger.Record, error)
	GetMany(ctx context.Context, ids []ledger.ID) (map[ledger.ID]ledger.Record, error)
	Payloads(ctx context.Context, recs []ledger.Record) (map[ledger.ID][]byte, error)
	PayloadOf(ctx context.Context, rec ledger.Record) ([]byte, error)
	Requeue(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	Reset(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	Unsent(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	Postpone(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	BuryStale(ctx context.Context, rec ledger.Record, cause string) (ledger.Record, error)
}

// sender enqueues events for the processor in batches and tells how many
// wait on the queue and how many are in flight.
type sender interface {
	SendBatch(ctx context.Context, msgs []queue.Message) []error
	Depth(ctx context.Context) (waiting, inFlight int, err error)
}

// locker is the reclaimer's run lock (ledger.LockRun, UnlockRun), which
// also carries the marks in the due index.
type locker interface {
	LockRun(ctx context.Context, owner string, until time.Time) (ledger.DueMarks, error)
	UnlockRun(ctx context.Context, owner string, marks ledger.DueMarks) error
}

// continuer starts the next run asynchronously (the function invoking
// itself with InvocationType Event).
type continuer interface {
	Continue(ctx context.Context, in Input) error
}

var (
	_ store  = (*ledger.Ledger)(nil)
	_ locker = (*ledger.Ledger)(nil)
	_ sender = (*queue.BatchSender)(nil)
)

// Defaults for Handler's zero fields.
const (
	DefaultPerShard   = 25
	DefaultLeaseGrace = 10 * time.Second
	// DefaultMaxQueue is the queue depth at which re-driving pauses.
	DefaultMaxQueue = 1000
	// DefaultMaxChain bounds the continuations one scheduled run starts.
	DefaultMaxChain = 10
	// DefaultMargin is the time left before the invocation's deadline at
	// which a run starts no new page (at most a quarter of the time it had).
	DefaultMargin = 5 * time.Second
	// DefaultRetryAfter is how soon a record whose message SQS failed is
	// due again.
	DefaultRetryAfter = 10 * time.Second
	// DefaultWorkers bounds the shards worked on at once.
	DefaultWorkers = 8
	// DefaultLag is how far behind a run's start the run leaves each
	// shard's mark (ledger.DueMarks): the next run reads again the entries
	// due in that last stretch, so an entry that the eventually consistent
	// index shows late (it trails the table by well under a second in
	// normal operation) is still read. A minute covers that many times
	// over, at the price of reading about one schedule period of entries
	// twice (half a read unit each).
	DefaultLag = time.Minute
)

// Handler is the reclaimer. Its fields are its dependencies.
type Handler struct {
	Ledger store
	Queue  sender
	// Continue starts the next run when a run's budget ran out with a
	// backlog left; nil: the next schedule tick picks the backlog up.
	Continue continuer
	// Lock makes runs take turns (a run that finds another holding it
	// ends at once, Stopped "locked"); nil: runs may overlap, which is
	// safe — every reclaim is a conditional write — but walks the same
	// shards twice.
	Lock locker
	// PerShard is the page size: due records read per shard query.
	PerShard int
	// Workers is how many shards are worked on at once (default the
	// smaller of the shard count and DefaultWorkers).
	Workers int
	// MaxQueue: re-driving pauses while at least this many messages wait
	// on the queue (default DefaultMaxQueue; negative: never pause).
	MaxQueue int
	// MaxChain bounds the chain of continuations (default DefaultMaxChain;
	// negative: no continuations).
	MaxChain int
	// Margin is kept free before the invocation's deadline (default
	// DefaultMargin, at most a quarter of the time the run had).
	Margin time.Duration
	// RetryAfter is how soon a record whose message SQS failed is due
	// again (default DefaultRetryAfter).
	RetryAfter time.Duration
	// LeaseGrace is how long after a live lease ends to look again.
	LeaseGrace time.Duration
	// Lag is how far behind the run's start each shard's mark stays
	// (default DefaultLag).
	Lag time.Duration
	// Backoff is the wait before the next look after the n-th reclaim
	// (default 1 minute doubling, at most 1 hour; see next for when a
	// record waits only Backoff(0)).
	Backoff func(reclaims int) time.Duration
	Log     *slog.Logger
	Metrics *metric.Emitter // nil: no metrics
	Now     func() time.Time
	// Store reads the bodies kept in the S3 payload store (nil: none).
	Store *blob.Store
	// DeadLetters, when set, takes the bodies the ledger lacks out of the
	// dead-letter queue at the start of each run (see DeadLetters).
	DeadLetters *DeadLetters

	mu    sync.Mutex
	known map[ledger.ID]time.Time // see remember
}

// maxKnown bounds the entries one run leaves known to the next (about a
// minute of new events at 800 a second); the rest are read again.
const maxKnown = 50000

// remember keeps, for the next run in this process, the entries of this
// run's walks that it found terminal and that the next run reads again
// (due after the mark it leaves their shard). A record leaves a terminal
// status only by a replay, which gives it a new due time too, so an entry
// the next run finds at the same due time is still a terminal record's, or
// one the index has not yet dropped: nothing to recover either way.
func (h *Handler) remember(walks []shardWalk, marks ledger.DueMarks) {
	known := map[ledger.ID]time.Time{}
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
func (h *Handler) takeKnown() map[ledger.ID]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := h.known
	h.known = nil
	return k
}

// Input is what a run is invoked with: the schedule's event (whose fields
// are ignored) or a continuation's.
type Input struct {
	// Chain is how many runs came before this one in an unbroken chain of
	// continuations; 0 for a scheduled or manual run.
	Chain int `json:"hookledger_reclaim_chain,omitempty"`
	// Lock is the run lock's owner token a continuation takes over.
	Lock string `json:"hookledger_reclaim_lock,omitempty"`
}

// How a run ended (Report.Stopped).
const (
	StopDrained     = "drained"      // every shard returned a short page
	StopBudget      = "budget"       // the time budget was spent with due records left
	StopPaced       = "paced"        // the queue stayed full until the budget was spent
	StopQueueDown   = "queue_down"   // the queue's depth could not be read: nothing re-driven into it
	StopCanceled    = "canceled"     // the context ended
	StopShardErrors = "shard_errors" // shards stopped on errors
	StopLocked      = "locked"       // another run holds the run lock
)

// Report counts what one run did.
type Report struct {
	Chain     int    `json:"chain"`
	Stopped   string `json:"stopped"`
	Backlog   bool   `json:"backlog"`   // due records were left when the run stopped
	Continued bool   `json:"continued"` // the run started its continuation
	Pages     int    `json:"pages"`
	Scanned   int    `json:"scanned"`
	Requeued  int    `json:"requeued"`
	Reset     int    `json:"reset"`
	Postponed int    `json:"postponed"`
	Buried    int    `json:"buried"`
	Skipped   int    `json:"skipped"`
	// Known is how many of the skipped entries were passed without a read:
	// the run before, in this process, found them terminal (see remember).
	Known     int `json:"known"`
	Conflicts int `json:"conflicts"`
	Unsent    int `json:"unsent"`   // SQS failed the entry; due again after RetryAfter, reclaim not counted
	Rejected  int `json:"rejected"` // SQS refused the entry; the reclaim counts
	Errors    int `json:"errors"`
	// Marked is how many shards' marks the run moved on (ledger.DueMarks).
	Marked  int   `json:"marked"`
	PacedMS int64 `json:"paced_ms"` // time workers spent waiting for room on the queue, summed
	RunMS   int64 `json:"run_ms"`   // wall time of the run
	// DeadLetters is what the run did with the dead-letter queue (with
	// DeadLetters configured).
	DeadLetters DeadLetterReport `json:"dead_letters"`

	// held are the records of a page that the run left where they were, so
	// that their shard's mark must not pass them (see hold).
	held map[ledger.ID]bool
}

// hold keeps the shard's mark before id's entry: the run could not settle
// the record (an error, or a conflict with another writer that may have
// claimed it without moving its due time), so the next run must read it
// again.
func (r *Report) hold(id ledger.ID) {
	if r.held == nil {
		r.held = map[ledger.ID]bool{}
	}
	r.held[id] = true
}

// Redriven is how many records the run put back on the queue.
func (r Report) Redriven() int { return r.Requeued + r.Reset }

func (r *Report) add(o Report) {
	r.Pages += o.Pages
	r.Scanned += o.Scanned
	r.Requeued += o.Requeued
	r.Reset += o.Reset
	r.Postponed += o.Postponed
	r.Buried += o.Buried
	r.Skipped += o.Skipped
	r.Known += o.Known
	r.Conflicts += o.Conflicts
	r.Unsent += o.Unsent
	r.Rejected += o.Rejected
	r.Errors += o.Errors
}

// Handle runs the shards until they are drained or the budget is spent.
// ev is the invocation's payload: an Input, its JSON (a continuation's) or
// anything else (the schedule's event, nil), which counts as a new chain.
// It returns an error only when every shard failed, so that a broken table
// alarms while a single throttled shard does not.
func (h *Handler) Handle(ctx context.Context, ev any) (Report, error) {
	in := inputOf(ev)
	log := h.logger()
	token, marks, ok := h.lock(ctx, in)
	if !ok {
		log.InfoContext(ctx, "reclaim run skipped: another run holds the run lock", "chain", in.Chain)
		return Report{Chain: in.Chain, Stopped: StopLocked}, nil
	}
	if marks == nil { // no lock to read them with
		var err error
		if marks, err = h.Ledger.ReadDueMarks(ctx); err != nil {
			log.WarnContext(ctx, "reclaim: due marks not read; walking every shard from its oldest entry", "error", err.Error())
			marks = ledger.DueMarks{}
		}
	}
	// Every run, continuations too: the pass is what watches the DLQ, and
	// a chain holds the scheduled runs off for as long as it lasts.
	var dead DeadLetterReport
	if h.DeadLetters != nil {
		dead = h.deadLetters(ctx, log)
	}
	r := h.newRun(ctx, in, marks)
	r.work()
	rep := r.report()
	rep.DeadLetters = dead
	next, moved := r.nextMarks()
	rep.Marked = moved
	h.remember(r.walks(), next)
	bg := context.WithoutCancel(ctx)
	if rep.Stopped == StopBudget || rep.Stopped == StopPaced {
		rep.Continued = h.continueRun(ctx, in, token, rep, next)
	}
	switch {
	case rep.Continued: // the continuation takes the lock over, and starts from the marks it stored
	case token != "":
		if err := h.Lock.UnlockRun(bg, token, next); err != nil {
			log.WarnContext(ctx, "reclaim run lock not released; it expires at the run's deadline", "error", err.Error())
		}
	case moved > 0:
		if err := h.Ledger.SaveDueMarks(bg, next); err != nil {
			log.WarnContext(ctx, "reclaim: due marks not stored; the next run reads those entries again", "error", err.Error())
		}
	}
	log.InfoContext(ctx, "reclaim run", "chain", rep.Chain, "stopped", rep.Stopped, "backlog", rep.Backlog, "continued", rep.Continued,
		"pages", rep.Pages, "scanned", rep.Scanned, "known", rep.Known, "requeued", rep.Requeued, "reset", rep.Reset, "postponed", rep.Postponed,
		"buried", rep.Buried, "conflicts", rep.Conflicts, "unsent", rep.Unsent, "rejected", rep.Rejected, "errors", rep.Errors,
		"marked", rep.Marked, "paced_ms", rep.PacedMS, "run_ms", rep.RunMS, "dead_letters_read", dead.Read, "dead_letters_cleared", dead.Cleared, "dead_letters_left", dead.Left)
	if r.failed > 0 && r.failed == h.Ledger.Shards() {
		return rep, fmt.Errorf("reclaim: all %d shards failed", r.failed)
	}
	return rep, nil
}

// deadLetters runs the DLQ pass within its budget (at most a quarter of
// the time the invocation has) and counts it.
func (h *Handler) deadLetters(ctx context.Context, log *slog.Logger) DeadLetterReport {
	budget := deadLetterBudget
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/4)
	}
	dctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	rep := h.DeadLetters.Run(dctx, log, h.now())
	// Each message read needs a person: one taken back off the queue, to
	// look for what kept failing; one left, to act on it (counted again by
	// each run while it stays); and so does a queue that cannot be read.
	// NeedsOperator is the one metric their alarm watches.
	unread := 0
	if rep.Unreadable {
		unread = 1
	}
	h.Metrics.Add(map[string]int{"DeadLettersCleared": rep.Cleared, "DeadLettersLeft": rep.Left, "NeedsOperator": rep.Cleared + rep.Left + unread})
	return rep
}

func inputOf(ev any) Input {
	in := decodeInput(ev)
	in.Chain = max(in.Chain, 0) // a hand-made payload cannot lengthen the chain
	return in
}

func decodeInput(ev any) Input {
	switch v := ev.(type) {
	case Input:
		return v
	case *Input:
		if v != nil {
			return *v
		}
	case json.RawMessage:
		var in Input
		json.Unmarshal(v, &in) // the schedule's event has no chain: 0
		return in
	case []byte:
		var in Input
		json.Unmarshal(v, &in)
		return in
	}
	return Input{}
}

// lock takes the run lock (a continuation takes over its predecessor's)
// and returns the marks it carries. ok is false when another run holds it;
// token is "" and marks nil when the run goes on without the lock (none
// configured, or it could not be written: running unlocked is safe).
func (h *Handler) lock(ctx context.Context, in Input) (token string, marks ledger.DueMarks, ok bool) {
	if h.Lock == nil {
		return "", nil, true
	}
	token = in.Lock
	if token == "" {
		var b [16]byte
		rand.Read(b[:])
		token = hex.EncodeToString(b[:])
	}
	// Without a deadline (a test, a tool) the lock lasts two minutes; a
	// longer run may then overlap with another, which is safe.
	until := h.now().Add(2 * time.Minute)
	if dl, has := ctx.Deadline(); has {
		until = h.now().Add(time.Until(dl))
	}
	marks, err := h.Lock.LockRun(ctx, token, until)
	switch {
	case errors.Is(err, ledger.ErrLeased):
		return "", nil, false
	case err != nil:
		h.logger().WarnContext(ctx, "reclaim run lock not taken; running without it", "error", err.Error())
		return "", nil, true
	}
	return token, marks, true
}

// continueRun starts the next run when this one left a backlog, re-drove
// something (a run that could not put anything on the queue would only
// wait again) and the chain is not at its bound, after storing the marks it
// is to start from.
func (h *Handler) continueRun(ctx context.Context, in Input, token string, rep Report, marks ledger.DueMarks) bool {
	max := h.MaxChain
	if max == 0 {
		max = DefaultMaxChain
	}
	if h.Continue == nil || !rep.Backlog || rep.Redriven() == 0 || in.Chain >= max {
		return false
	}
	if err := h.Ledger.SaveDueMarks(context.WithoutCancel(ctx), marks); err != nil {
		h.logger().WarnContext(ctx, "reclaim: due marks not stored; the continuation reads those entries again", "error", err.Error())
	}
	if err := h.Continue.Continue(context.WithoutCancel(ctx), Input{Chain: in.Chain + 1, Lock: token}); err != nil {
		h.logger().WarnContext(ctx, "reclaim continuation not started; the next schedule tick picks the backlog up", "error", err.Error())
		return false
	}
	return true
}

func (h *Handler) logger() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) backoff(reclaims int) time.Duration {
	if h.Backoff != nil {
		return h.Backoff(reclaims)
	}
	d := time.Minute
	for i := 0; i < reclaims && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

func (h *Handler) perShard() int {
	if h.PerShard > 0 {
		return h.PerShard
	}
	return DefaultPerShard
}

// run is one invocation's state, shared by its workers.
type run struct {
	h     *Handler
	ctx   context.Context
	chain int
	start time.Time // by the handler's clock
	wall  time.Time // by the wall clock
	// end is when the budget is spent (zero: no deadline, run until drained).
	end   time.Time
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
	known   map[ledger.ID]time.Time // what the run before found terminal (read only)
	cutoff  time.Time               // upTo(): entries after it are noted for the next run
	noted   atomic.Int64            // entries noted (sawTerminal)
}

// shardWalk is where one shard's walk stands: it reads the shard's entries
// due after its mark, page by page.
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

// settled is how far the walk leaves the shard's mark: up to upTo (the
// run's start less the lag) once it read the shard to the end, else up to
// just before the last entry it handled (entries with that same due time
// may wait on the next page), and in either case before every entry it
// held. Never before where it started.
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

// upTo is the latest a shard's mark may move in this run: the lag behind
// its start.
func (r *run) upTo() time.Time {
	lag := r.h.Lag
	if lag <= 0 {
		lag = DefaultLag
	}
	return r.start.Add(-lag)
}

// sawTerminal notes an entry of a terminal record for the next run (see
// Handler.remember): only one the next run reads again, past the lag
// behind this run's start (an entry before it is past the mark once the
// shard is settled), and no more than maxKnown in all, so that a run that
// walks a long stretch (its marks lost, or held back) holds no more in
// memory than a minute of entries.
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

// nextMarks is the marks the run leaves, and how many shards' marks it
// moved on.
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

func (h *Handler) newRun(ctx context.Context, in Input, marks ledger.DueMarks) *run {
	r := &run{h: h, ctx: ctx, chain: in.Chain, start: h.now(), wall: time.Now(), limit: h.perShard(), marks: marks, known: h.takeKnown()}
	r.cutoff = r.upTo()
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		margin := h.Margin
		if margin <= 0 {
			margin = DefaultMargin
		}
		margin = min(margin, left/4)
		r.end = r.start.Add(left - margin)
	}
	if h.MaxQueue >= 0 {
		max := h.MaxQueue
		if max == 0 {
			max = DefaultMaxQueue
		}
		r.pace = &pacer{max: max, read: h.Queue.Depth, now: h.now}
	}
	for s := range h.Ledger.Shards() {
		r.ready = append(r.ready, shardWalk{shard: s, mark: marks[s]})
	}
	return r
}

// work runs the workers until every shard is drained or the run stops.
func (r *run) work() {
	workers := r.h.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	workers = min(workers, len(r.ready))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(r.worker)
	}
	wg.Wait()
}

// next hands out the shard whose turn it is, or false when the run is over
// for this worker.
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

// giveBack stops the run for why and puts the shard back untouched: its
// due records stay for the next run.
func (r *run) giveBack(w shardWalk, why string) {
	r.mu.Lock()
	r.ready = append(r.ready, w)
	if r.stop == "" {
		r.stop = why
	}
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
// the shard's walk goes on. It reads the page's records with eventually
// consistent reads first (half the price): on the happy path they are done,
// and passed on that word (see ledger.Peek); only the others are read
// again, consistently, before anything is done with them. It records in w
// how far the page took the walk and which entries it left where they were.
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
	ids := make([]ledger.ID, 0, len(entries))
	at := make(map[ledger.ID]time.Time, len(entries))
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
	var peeked map[ledger.ID]ledger.Record
	if len(ids) > 0 {
		peeked, _ = h.Ledger.Peek(ctx, ids) // a record it lacks is read again below
	}
	var again []ledger.ID
	for _, id := range ids {
		if p, ok := peeked[id]; !ok || !p.Status.Terminal() {
			again = append(again, id)
		}
	}
	var recs map[ledger.ID]ledger.Record
	var readErr error
	if len(again) > 0 {
		recs, readErr = h.Ledger.GetMany(ctx, again)
		if readErr != nil {
			h.logger().WarnContext(ctx, "reclaim: some records could not be read; they wait for the next run", "shard", w.shard, "error", readErr.Error())
		}
	}
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

// decide settles a due record that needs no message (a live lease is
// postponed) and reports whether it is to be re-driven, or buried past its
// give-up time: redrive reads its body first, because a record whose body
// is stored nowhere is buried with a cause that says where it may be.
func (h *Handler) decide(ctx context.Context, rec ledger.Record, now time.Time, rep *Report) (bool, error) {
	if rec.LeaseLive(now) {
		grace := h.LeaseGrace
		if grace <= 0 {
			grace = DefaultLeaseGrace
		}
		if _, err := h.Ledger.Postpone(ctx, rec, rec.LeaseUntil.Add(grace)); err != nil {
			return false, err
		}
		rep.Postponed++
		return false, nil
	}
	return true, nil
}

// giveUp marks dead a record whose give-up time has come (GiveUpAt), with
// a cause that says what kept it from being done.
func (h *Handler) giveUp(ctx context.Context, rec ledger.Record, until time.Time, rep *Report) {
	cause := fmt.Sprintf("gave up at %s, %s before the record expires: not done since %s %s, after %s (%s, %s) and %s. "+
		"Interrupted runs are crashes, timeouts, lost leases and AWS errors, not failures of the handler: fix what interrupts it "+
		"(the processor's errors and timeouts), then hookledger replay --source %s --tenant %s --key %s. Last status %s",
		until.UTC().Format(time.RFC3339), short(rec.ExpiresAt.Sub(until)), started(rec), rec.Since().UTC().Format(time.RFC3339),
		plural(rec.Attempts, "run"), plural(rec.Interrupted, "interrupted run"), plural(rec.Failures, "failure"), plural(rec.Reclaims, "reclaim"),
		rec.Source, rec.Tenant, rec.Key, rec.Status)
	if rec.LastError != "" {
		cause += ", last error: " + rec.LastError
	}
	if _, err := h.Ledger.BuryStale(ctx, rec, cause); err != nil {
		h.count(ctx, rec, err, rep)
		return
	}
	rep.Buried++
	h.Metrics.Count("Dead", "NeedsOperator")
	h.logger().ErrorContext(ctx, "event dead", "source", rec.Source, "tenant", rec.Tenant, "event_key", rec.Key,
		"status", string(rec.Status), "attempts", rec.Attempts, "interrupted", rec.Interrupted, "failures", rec.Failures, "reclaims", rec.Reclaims, "cause", cause)
}

// started names what Record.Since is, for causes.
func started(rec ledger.Record) string {
	if rec.ReplayedAt.After(rec.CreatedAt) {
		return "its replay at"
	}
	return "it was received at"
}

// plural returns n and noun, with an s unless n is 1: "1 run", "2 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// short prints a duration without trailing zero units: 24h, 12h30m.
func short(d time.Duration) string {
	d = d.Round(time.Minute)
	s := d.String()
	for _, suffix := range []string{"m0s", "h0m"} {
		if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
			s = s[:len(s)-len(suffix)+1]
		}
	}
	return s
}

// count books a failed transition: a conflict means another reclaimer or a
// worker acted first, which is fine. Either way the record is held: the
// next run reads it again (a worker's claim leaves its due time where it
// was, and the worker may yet die).
func (h *Handler) count(ctx context.Context, rec ledger.Record, err error, rep *Report) {
	rep.hold(rec.ID)
	if errors.Is(err, ledger.ErrConflict) {
		rep.Conflicts++
		return
	}
	rep.Errors++
	h.logger().WarnContext(ctx, "reclaim failed", "source", rec.Source, "tenant", rec.Tenant, "event_key", rec.Key,
		"status", string(rec.Status), "error", err.Error())
}

// redrive re-enqueues records: read their payloads in one go, take each
// with its own conditional write (Requeue or Reset, so only one reclaimer
// ever sends a given record), then send the messages of those it took in
// batches. A record past its give-up time is buried instead (giveUp, or
// buryBodiless when its body is stored nowhere). A message SQS failed is
// taken back (Unsent) and due again soon; one whose fate is unknown stays
// counted and is due again after its backoff, like one whose send never
// happened because the run died. idle: the queue was idle when the run
// began (see next).
func (h *Handler) redrive(ctx context.Context, recs []ledger.Record, now time.Time, idle bool, rep *Report) {
	var inLedger []ledger.Record // the rest keep their body in the payload store
	for _, rec := range recs {
		if rec.PayloadRef == "" {
			inLedger = append(inLedger, rec)
		}
	}
	// Only each record's own body: a payload item an earlier event under
	// the key left behind is not this record's (ledger.Payloads).
	bodies, readErr := h.Ledger.Payloads(ctx, inLedger)
	if readErr != nil {
		h.logger().WarnContext(ctx, "reclaim: some payloads could not be read; their records wait for the next run", "error", readErr.Error())
	}
	var msgs []queue.Message
	var taken []ledger.Record
	var reset []bool // taken[i] was processing with an expired lease
	for _, rec := range recs {
		next := h.next(rec, now, idle)
		body, ok := bodies[rec.ID]
		if rec.PayloadRef != "" {
			b, err := blob.Body(ctx, h.Ledger, h.Store, rec)
			switch {
			case errors.Is(err, blob.ErrMissing):
			case err != nil:
				rep.Errors++ // unknown: look again next run
				rep.hold(rec.ID)
				h.logger().WarnContext(ctx, "reclaim: payload store read failed", "source", rec.Source, "tenant", rec.Tenant, "event_key", rec.Key, "error", err.Error())
				continue
			default:
				body, ok = b, true
			}
		} else if !ok && readErr != nil {
			rep.Errors++ // unknown: look again next run
			rep.hold(rec.ID)
			continue
		}
		if !ok {
			log := h.logger().With("source", rec.Source, "tenant", rec.Tenant, "event_key", rec.Key, "status", string(rec.Status))
			if waiting, err := h.awaitMessage(ctx, rec, now, log); waiting || err != nil {
				if err != nil {
					h.count(ctx, rec, err, rep)
				} else {
					rep.Postponed++
				}
				continue
			}
			// Past the wait: the message is gone from the queue, or the
			// record's give-up time has come. Nothing the reclaimer can do
			// brings the body back: bury the record, saying where the body
			// may still be, so that it ends dead (alarmed, listed for
			// replay) before it expires.
			h.buryBodiless(ctx, rec, rep)
			continue
		}
		if until := GiveUpAt(rec); !until.IsZero() && !now.Before(until) {
			h.giveUp(ctx, rec, until, rep)
			continue
		}
		var took ledger.Record
		var err error
		if rec.Status == ledger.Processing {
			took, err = h.Ledger.Reset(ctx, rec, next)
			if err == nil {
				inject.Crash(inject.ReclaimerAfterReset)
			}
		} else {
			took, err = h.Ledger.Requeue(ctx, rec, next)
		}
		if err != nil {
			h.count(ctx, rec, err, rep)
			continue
		}
		// The conditional write above made this reclaimer the only one to
		// send this record now.
		msgs = append(msgs, queue.Message{
			Source: rec.Source, Tenant: rec.Tenant, Key: rec.Key, Type: rec.EventType, SHA256: rec.BodySHA256, Body: body,
			ReceivedAt: rec.CreatedAt.UnixMilli(), Ref: rec.PayloadRef,
		})
		taken = append(taken, took)
		reset = append(reset, rec.Status == ledger.Processing)
	}
	if len(msgs) > 0 {
		h.send(ctx, msgs, taken, reset, now, idle, rep)
	}
}

// send sends the messages of the records redrive took (taken[i] as its
// write left it; reset[i]: it was processing) and books SQS's answer for
// each.
func (h *Handler) send(ctx context.Context, msgs []queue.Message, taken []ledger.Record, reset []bool, now time.Time, idle bool, rep *Report) {
	sent := 0
	retry := h.RetryAfter
	if retry <= 0 {
		retry = DefaultRetryAfter
	}
	for i, err := range h.Queue.SendBatch(ctx, msgs) {
		rec := taken[i]
		switch {
		case err == nil && reset[i]:
			sent++
			rep.Reset++
		case err == nil:
			sent++
			rep.Requeued++
		case errors.Is(err, queue.ErrNotSent):
			if _, uerr := h.Ledger.Unsent(ctx, rec, now.Add(retry)); uerr != nil {
				h.count(ctx, rec, uerr, rep)
				continue
			}
			rep.Unsent++
		case errors.Is(err, queue.ErrRejected):
			rep.Rejected++
			if idle && !reset[i] && rec.Status == ledger.Received {
				// Refused, not lost: the short wait (next) is not for it.
				prev := rec
				prev.Reclaims--
				if _, perr := h.Ledger.Postpone(ctx, rec, h.next(prev, now, false)); perr != nil {
					h.count(ctx, rec, perr, rep)
				}
			}
			h.logger().ErrorContext(ctx, "queue refused the re-driven message; the reclaim counts, and the event is dead at its give-up time unless a send succeeds first",
				"source", rec.Source, "tenant", rec.Tenant, "event_key", rec.Key, "reclaims", rec.Reclaims, "gives_up_at", GiveUpAt(rec), "error", err.Error())
		default:
			rep.Errors++
			h.logger().WarnContext(ctx, "re-drive send failed; due again after its backoff", "source", rec.Source, "tenant", rec.Tenant,
				"event_key", rec.Key, "reclaims", rec.Reclaims, "error", err.Error())
		}
	}
	h.Metrics.Add(map[string]int{"Reclaimed": sent})
}

// MessageLifetime is the longest a message can stay on an SQS queue: 14
// days, SQS's longest retention (the template's queues keep messages that
// long).
const MessageLifetime = 14 * 24 * time.Hour

// ExpiryMargin is how long before a record expires the reclaimer gives up
// on it (GiveUpAt), at most: half the time from the start of its window
// (its creation, or the operator's last replay) to its expiry when that is
// shorter.
//
// A day leaves time for a reclaimer that is down, throttled or held back by
// a full queue when the give-up time comes, and the operator a day, once
// the Dead alarm fires, to fix what kept the event from being done (and
// redrive the dead-letter queue, for a body that survives only there) and
// replay it before the record expires. A record that expired still
// non-terminal would be gone without a Dead alarm: silently lost.
const ExpiryMargin = 24 * time.Hour

// GiveUpAt is when the reclaimer stops re-driving rec and marks it dead
// instead (zero: never, for a record that never expires): ExpiryMargin
// before it expires, or half way from the start of its window (its
// creation, or the operator's last replay) to its expiry when that leaves
// less.
//
// This is the bound on trouble that is not the handler's: crashes, Lambda
// timeouts, lost leases, DynamoDB and SQS errors do not spend the event's
// MaxAttempts (which counts the handler's own failures) and are re-driven,
// backing off up to an hour between looks, until GiveUpAt. A source's
// retention is at least its provider's retry horizon (by default the
// horizon plus a day where HOOKLEDGER_RETENTION is shorter, so GiveUpAt is
// the horizon itself: the event keeps trying as long as its sender would
// have), and with the default 7-day retention the event keeps trying for 6
// days. Infrastructure trouble is transient by nature (an outage, a bad
// deploy, an overloaded machine), so a short bound would kill events that a
// little more patience completes, while the alarms on processor errors,
// the oldest message's age and the dead-letter queue tell the operator
// within minutes that something is wrong.
func GiveUpAt(rec ledger.Record) time.Time {
	if rec.ExpiresAt.IsZero() {
		return time.Time{}
	}
	start := rec.Since()
	margin := min(ExpiryMargin, rec.ExpiresAt.Sub(start)/2)
	return rec.ExpiresAt.Add(-margin)
}

// next is when to look at rec again after re-driving it now: after its
// backoff, and no later than its give-up time, so that the look that
// buries it comes on time.
//
// The backoff spares a consumer that takes messages and fails. A received
// record shows no such consumer: nobody claimed its last message. If,
// besides, nothing waited on the queue or was in flight when the run
// began (idle), that message is gone, not slow: the queue lost it. Such a
// record waits only the first step, however often it was re-driven, so
// that it is re-driven within a step of the queue working again.
func (h *Handler) next(rec ledger.Record, now time.Time, idle bool) time.Time {
	wait := h.backoff(rec.Reclaims)
	if idle && rec.Status == ledger.Received {
		wait = h.backoff(0)
	}
	next := now.Add(wait)
	if until := GiveUpAt(rec); !until.IsZero() && next.After(until) {
		return until
	}
	return next
}

// awaitUntil is when the reclaimer stops waiting for rec's message: the
// earlier of the longest the message can stay on the queue and the
// record's give-up time.
func (h *Handler) awaitUntil(rec ledger.Record) time.Time {
	until := rec.CreatedAt.Add(MessageLifetime)
	if cap := GiveUpAt(rec); !cap.IsZero() && cap.Before(until) {
		return cap
	}
	return until
}

// awaitMessage decides what to do with a record whose body is stored
// nowhere the reclaimer can read. The body of an event whose message is
// still on the queue may live only in that message: with
// HOOKLEDGER_PAYLOAD=on-trouble, or when the receiver's payload write
// failed beside a successful enqueue, and the processor keeps it in the
// ledger only once the event runs into trouble (a redelivery, a failure,
// a burial). Such a record cannot be re-driven, and counting reclaims
// would bury an event that a backlogged or redelivered message would still
// complete. So while the message may still be on the queue, and the record
// is not so close to its expiry that it could no longer go dead in time
// (awaitUntil), the record is postponed without counting a reclaim,
// looking again after its age (1 minute to 1 hour, never past the end of
// the wait). Past that, it reports false and the caller counts reclaims
// and buries as before.
func (h *Handler) awaitMessage(ctx context.Context, rec ledger.Record, now time.Time, log *slog.Logger) (bool, error) {
	age := now.Sub(rec.CreatedAt)
	until := h.awaitUntil(rec)
	if rec.CreatedAt.IsZero() || !now.Before(until) {
		return false, nil
	}
	next := now.Add(min(max(age, time.Minute), time.Hour))
	if next.After(until) {
		next = until
	}
	if _, err := h.Ledger.Postpone(ctx, rec, next); err != nil {
		return false, err
	}
	h.Metrics.Count("AwaitingMessage")
	log.InfoContext(ctx, "payload not stored; waiting for the event's message, which may still be on the queue",
		"age_s", int(age.Seconds()), "attempts", rec.Attempts, "until", until)
	return true, nil
}

// buryBodiless marks dead a record whose body was never stored and whose
// message has not come back for the whole wait: past awaitUntil.
// BuryStale holds for received, failed and processing records
// with an expired lease, and needs no payload. The cause tells the
// operator where the body may still be: a message its workers kept dying
// on went to the dead-letter queue with it (maxReceiveCount deliveries).
// Redriving that queue (hookledger replay --dlq) hands the message to the
// processor, which finds the event dead and keeps the body; the event is
// then replayed like any dead one.
func (h *Handler) buryBodiless(ctx context.Context, rec ledger.Record, rep *Report) {
	cause := fmt.Sprintf("message and body not seen since it was received at %s (%d attempts, %d interrupted, %d reclaims, last status %s): the body was never stored in the ledger "+
		"and its message is gone from the queue. If the dead-letter queue holds the message, run hookledger replay --dlq DLQ_URL, then hookledger replay --source %s --tenant %s --key %s",
		rec.CreatedAt.UTC().Format(time.RFC3339), rec.Attempts, rec.Interrupted, rec.Reclaims, rec.Status, rec.Source, rec.Tenant, rec.Key)
	if rec.LastError != "" {
		cause += "; last error: " + rec.LastError
	}
	if _, err := h.Ledger.BuryStale(ctx, rec, cause); err != nil {
		h.count(ctx, rec, err, rep)
		return
	}
	rep.Buried++
	h.Metrics.Count("Dead", "NeedsOperator")
	h.logger().ErrorContext(ctx, "event dead", "source", rec.Source, "tenant", rec.Tenant, "event_key", rec.Key,
		"status", string(rec.Status), "reclaims", rec.Reclaims, "cause", cause)
}
