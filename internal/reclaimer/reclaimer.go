// Package reclaimer is the reclaimer Lambda's handler. On a schedule it
// finds overdue records through the ledger's sparse due index. It
// re-enqueues received and failed records, resets and re-enqueues expired
// leases (the recorded steps decide, at the retry, what already happened),
// and marks dead what cannot be done before its record expires (GiveUpAt).
// Every action is one conditional write, so two reclaimers never both act
// on one record.
//
// A run walks the shards in parallel, a page at a time: one Query, one
// BatchGetItem each for records and bodies, a conditional write per record,
// one SendMessageBatch per ten messages. It goes on while shards return
// full pages and its time budget lasts, paced by the queue's depth so new
// events never wait behind many re-driven ones. A run that leaves a backlog
// starts the next at once (a continuation), a bounded number of times.
//
// The due index keeps done records (see package ledger), so a run reads
// each shard only from the mark the last run left there (ledger.DueMarks):
// an entry is read about once, and a done record costs half a read unit
// instead of the write its removal would. The mark moves only past what the
// run settled. It stops before the first entry the run held (an error, or a
// conflict: a worker's claim leaves the due time, and the worker may die)
// and before the rest of an unfinished shard. It stays a lag behind the
// run's start (Handler.Lag), for entries the eventually consistent index
// shows late. A mark too early costs reads; none is too late, as every
// write gives a due time at or after itself. A warm container passes the
// entries the last run found terminal without reading them (Report.Known).
package reclaimer

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// store is the slice of the ledger the reclaimer calls.
type store interface {
	Shards() int
	DueAfter(ctx context.Context, shard int, after, upTo time.Time, limit int, from ledger.DueCursor) ([]ledger.DueEntry, ledger.DueCursor, error)
	ReadDueMarks(ctx context.Context) (ledger.DueMarks, error)
	SaveDueMarks(ctx context.Context, marks ledger.DueMarks) error
	Peek(ctx context.Context, ids []ledger.Key) (map[ledger.Key]ledger.Record, error)
	GetMany(ctx context.Context, ids []ledger.Key) (map[ledger.Key]ledger.Record, error)
	Payloads(ctx context.Context, recs []ledger.Record) (map[ledger.Key][]byte, error)
	PayloadOf(ctx context.Context, rec ledger.Record) ([]byte, error)
	Requeue(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	Reset(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	Unsent(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	Postpone(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	BuryStale(ctx context.Context, rec ledger.Record, cause string) (ledger.Record, error)
}

// sender enqueues events in batches and tells how many wait and how many are in flight.
type sender interface {
	SendBatch(ctx context.Context, msgs []queue.Message) []error
	Depth(ctx context.Context) (waiting, inFlight int, err error)
}

// locker is the run lock (ledger.LockRun), which also carries the due marks.
type locker interface {
	LockRun(ctx context.Context, owner string, until time.Time) (ledger.DueMarks, error)
	UnlockRun(ctx context.Context, owner string, marks ledger.DueMarks) error
}

// continuer starts the next run asynchronously (the function invoking itself).
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
	DefaultMaxQueue   = 1000 // the queue depth at which re-driving pauses
	DefaultMaxChain   = 10   // continuations one scheduled run starts
	// DefaultMargin is the time left before the deadline at which a run
	// starts no new page (at most a quarter of the time it had).
	DefaultMargin     = 5 * time.Second
	DefaultRetryAfter = 10 * time.Second // when a record SQS failed to send is due again
	DefaultWorkers    = 8                // shards worked on at once
	// DefaultLag is how far behind a run's start each shard's mark stays,
	// so the next run reads again what the index showed late. The index
	// trails the table by well under a second.
	DefaultLag = time.Minute
)

// Handler is the reclaimer. Its fields are its dependencies.
type Handler struct {
	Ledger store
	Queue  sender
	// Continue starts the next run when a run's budget ran out with a
	// backlog left; nil: the next schedule tick picks the backlog up.
	Continue continuer
	// Lock makes runs take turns (StopLocked). nil: runs may overlap,
	// which is safe but reads the same shards twice.
	Lock       locker
	PerShard   int           // the page size: due records read per shard query
	Workers    int           // shards worked on at once (default DefaultWorkers)
	MaxQueue   int           // the queue depth at which re-driving pauses (default DefaultMaxQueue; negative: never)
	MaxChain   int           // continuations in a chain (default DefaultMaxChain; negative: none)
	Margin     time.Duration // kept free before the deadline (default DefaultMargin)
	RetryAfter time.Duration // when a record SQS failed to send is due again (DefaultRetryAfter)
	LeaseGrace time.Duration // how long after a live lease ends to look again (DefaultLeaseGrace)
	Lag        time.Duration // how far behind the run's start marks stay (DefaultLag)
	// Backoff is the wait before the next look after the n-th reclaim
	// (default 1 minute doubling, at most 1 hour; see next).
	Backoff     func(reclaims int) time.Duration
	Log         *slog.Logger
	Metrics     *metric.Emitter // nil: no metrics
	Now         func() time.Time
	Store       *blob.Store  // the S3 payload store (nil: none)
	DeadLetters *DeadLetters // takes the bodies the ledger lacks out of the DLQ each run (nil: not)
	// Trace records a span per run and one per re-drive, in the event's
	// trace (nil: none).
	Trace *trace.Tracer

	mu    sync.Mutex
	known map[ledger.Key]time.Time // see remember
}

// Input is what a run is invoked with: a continuation's, or the schedule's (fields ignored).
type Input struct {
	// Chain is how many runs came before this one in an unbroken chain of
	// continuations; 0 for a scheduled or manual run.
	Chain int    `json:"hookledger_reclaim_chain,omitempty"`
	Lock  string `json:"hookledger_reclaim_lock,omitempty"` // the run lock's owner token a continuation takes over
}

// Handle runs the shards until they are drained or the budget is spent. ev
// is an Input, its JSON, or anything else (the schedule's event): a new
// chain. It fails only when every shard failed, so a broken table alarms
// while a single throttled shard does not.
func (h *Handler) Handle(ctx context.Context, ev any) (Report, error) {
	if h.Trace != nil {
		return h.traced(ctx, ev)
	}
	return h.handle(ctx, ev)
}

func (h *Handler) handle(ctx context.Context, ev any) (Report, error) {
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
	var dead DeadLetterReport
	// Every run, continuations too: the pass is what watches the DLQ, and
	// a chain holds the scheduled runs off for as long as it lasts.
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

// deadLetters runs the DLQ pass within its budget (at most a quarter of the time left).
func (h *Handler) deadLetters(ctx context.Context, log *slog.Logger) DeadLetterReport {
	budget := deadLetterBudget
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/4)
	}
	dctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	rep := h.DeadLetters.Run(dctx, log, h.now())
	// Every message read needs a person (what kept failing, or what to do
	// with it), and so does an unreadable queue: NeedsOperator is their alarm.
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
	var in Input
	switch v := ev.(type) {
	case Input:
		return v
	case *Input:
		if v != nil {
			return *v
		}
	case json.RawMessage:
		json.Unmarshal(v, &in) // the schedule's event has no chain: 0
	case []byte:
		json.Unmarshal(v, &in)
	}
	return in
}

// lock takes the run lock (a continuation takes its predecessor's) and
// returns its marks. ok is false when another run holds it; token is "" and
// marks nil when the run goes on unlocked (no lock, or a failed write).
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

// continueRun stores the marks and starts the next run when this one left a
// backlog and re-drove something (else the next would only wait again).
func (h *Handler) continueRun(ctx context.Context, in Input, token string, rep Report, marks ledger.DueMarks) bool {
	if h.Continue == nil || !rep.Backlog || rep.Redriven() == 0 || in.Chain >= cmp.Or(h.MaxChain, DefaultMaxChain) {
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

func (h *Handler) logger() *slog.Logger { return fallback.Logger(h.Log) }

func (h *Handler) now() time.Time { return fallback.Now(h.Now) }

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
