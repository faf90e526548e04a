// Package reclaimer is the reclaimer Lambda's handler: on a schedule it
// finds overdue records through the ledger's sparse due index and recovers
// them — re-enqueues received and failed records, resets expired leases to
// received and re-enqueues them (the event's recorded steps decide, at the
// retry, what already happened), and marks dead what has been reclaimed
// too often. Every action is one conditional write, so two reclaimers never
// both act on one record.
package reclaimer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	Due(ctx context.Context, shard int, now time.Time, limit int) ([]ledger.ID, error)
	Get(ctx context.Context, id ledger.ID) (ledger.Record, error)
	Payload(ctx context.Context, id ledger.ID) ([]byte, error)
	Requeue(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	Reset(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	Postpone(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error)
	BuryStale(ctx context.Context, rec ledger.Record, cause string) (ledger.Record, error)
}

// sender enqueues an event for the processor.
type sender interface {
	Send(ctx context.Context, m queue.Message) error
}

var (
	_ store  = (*ledger.Ledger)(nil)
	_ sender = (*queue.Sender)(nil)
)

// Defaults for Handler's zero fields.
const (
	DefaultPerShard    = 25
	DefaultMaxReclaims = 5
	DefaultLeaseGrace  = 10 * time.Second
)

// Handler is the reclaimer. Its fields are its dependencies.
type Handler struct {
	Ledger store
	Queue  sender
	// PerShard bounds the records looked at per shard per run.
	PerShard int
	// MaxReclaims: a record due again after this many reclaims is dead.
	MaxReclaims int
	// LeaseGrace is how long after a live lease ends to look again.
	LeaseGrace time.Duration
	// Backoff is the wait before the next look after the n-th reclaim
	// (default 1 minute doubling, at most 1 hour).
	Backoff func(reclaims int) time.Duration
	Log     *slog.Logger
	Metrics *metric.Emitter // nil: no metrics
	Now     func() time.Time
	// Store reads the bodies kept in the S3 payload store (nil: none).
	Store *blob.Store
}

// Report counts what one run did.
type Report struct {
	Scanned   int `json:"scanned"`
	Requeued  int `json:"requeued"`
	Reset     int `json:"reset"`
	Postponed int `json:"postponed"`
	Buried    int `json:"buried"`
	Skipped   int `json:"skipped"`
	Conflicts int `json:"conflicts"`
	Errors    int `json:"errors"`
}

// Handle runs one pass over every shard. Its input (the schedule's event) is
// ignored. It returns an error only when every shard failed, so that a
// broken table alarms while a single throttled shard does not.
func (h *Handler) Handle(ctx context.Context, _ any) (Report, error) {
	var rep Report
	failed := 0
	for shard := range h.Ledger.Shards() {
		if err := h.shard(ctx, shard, &rep); err != nil {
			failed++
			h.logger().ErrorContext(ctx, "reclaim shard failed", "shard", shard, "error", err.Error())
		}
		if ctx.Err() != nil {
			break
		}
	}
	h.logger().InfoContext(ctx, "reclaim run", "scanned", rep.Scanned, "requeued", rep.Requeued, "reset", rep.Reset,
		"postponed", rep.Postponed, "buried", rep.Buried, "conflicts", rep.Conflicts, "errors", rep.Errors)
	if failed > 0 && failed == h.Ledger.Shards() {
		return rep, fmt.Errorf("reclaim: all %d shards failed", failed)
	}
	return rep, nil
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

func (h *Handler) shard(ctx context.Context, shard int, rep *Report) error {
	limit := h.PerShard
	if limit <= 0 {
		limit = DefaultPerShard
	}
	ids, err := h.Ledger.Due(ctx, shard, h.now(), limit)
	if err != nil {
		return err
	}
	for _, id := range ids {
		rep.Scanned++
		err := h.one(ctx, id, rep)
		switch {
		case errors.Is(err, ledger.ErrConflict):
			rep.Conflicts++ // someone else acted first; fine
		case err != nil:
			rep.Errors++
			h.logger().WarnContext(ctx, "reclaim failed", "source", id.Source, "tenant", id.Tenant, "event_key", id.Key, "error", err.Error())
		}
	}
	return nil
}

func (h *Handler) one(ctx context.Context, id ledger.ID, rep *Report) error {
	rec, err := h.Ledger.Get(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		rep.Skipped++ // expired; TTL will remove the index entry
		return nil
	}
	if err != nil {
		return err
	}
	now := h.now()
	if rec.Status.Terminal() || rec.DueAt.IsZero() || rec.DueAt.After(now) {
		rep.Skipped++ // the index lagged behind the table
		return nil
	}
	log := h.logger().With("source", id.Source, "tenant", id.Tenant, "event_key", id.Key, "status", string(rec.Status))
	max := h.MaxReclaims
	if max <= 0 {
		max = DefaultMaxReclaims
	}
	if rec.LeaseLive(now) {
		grace := h.LeaseGrace
		if grace <= 0 {
			grace = DefaultLeaseGrace
		}
		if _, err := h.Ledger.Postpone(ctx, rec, rec.LeaseUntil.Add(grace)); err != nil {
			return err
		}
		rep.Postponed++
		return nil
	}
	if rec.Reclaims >= max {
		cause := fmt.Sprintf("reclaimed %d times without completing (last status %s", rec.Reclaims, rec.Status)
		if rec.LastError != "" {
			cause += ", last error: " + rec.LastError
		}
		cause += ")"
		if _, err := h.Ledger.BuryStale(ctx, rec, cause); err != nil {
			return err
		}
		rep.Buried++
		h.Metrics.Count("Dead")
		log.ErrorContext(ctx, "event dead", "reclaims", rec.Reclaims, "cause", cause)
		return nil
	}
	next := now.Add(h.backoff(rec.Reclaims))
	body, err := blob.Body(ctx, h.Ledger, h.Store, rec)
	if errors.Is(err, blob.ErrMissing) {
		if waiting, err := h.awaitMessage(ctx, rec, now, log); waiting || err != nil {
			if err == nil {
				rep.Postponed++
			}
			return err
		}
		// The receiver died between the record and the payload and the sender
		// has not retried yet. Count a reclaim and wait for that retry (it
		// re-stores the payload); the record dies when reclaims run out.
		if _, err := h.Ledger.Requeue(ctx, rec, next); err != nil {
			return err
		}
		log.WarnContext(ctx, "payload missing; waiting for the sender's retry", "reclaims", rec.Reclaims+1)
		rep.Postponed++
		return nil
	}
	if err != nil {
		return err
	}
	if rec.Status == ledger.Processing {
		if _, err := h.Ledger.Reset(ctx, rec, next); err != nil {
			return err
		}
		inject.Crash(inject.ReclaimerAfterReset)
		rep.Reset++
	} else {
		if _, err := h.Ledger.Requeue(ctx, rec, next); err != nil {
			return err
		}
		rep.Requeued++
	}
	h.Metrics.Count("Reclaimed")
	// The conditional write above made this reclaimer the only one to act;
	// if the send fails, due_at has moved on and the next run tries again.
	return h.Queue.Send(ctx, queue.Message{
		Source: id.Source, Tenant: id.Tenant, Key: id.Key, Type: rec.EventType, SHA256: rec.BodySHA256, Body: body,
		ReceivedAt: rec.CreatedAt.UnixMilli(), Ref: rec.PayloadRef,
	})
}

// MessageLifetime is the longest a message can stay on an SQS queue: 14
// days, SQS's longest retention (the template's queues keep messages that
// long).
const MessageLifetime = 14 * 24 * time.Hour

// awaitMessage decides what to do with a record whose body is stored
// nowhere the reclaimer can read. The body of an event whose message is
// still on the queue may live only in that message: with
// HOOKLEDGER_PAYLOAD=on-trouble, or when the receiver's payload write
// failed beside a successful enqueue, and the processor keeps it in the
// ledger only once the event runs into trouble (a redelivery, a failure,
// a burial). Such a record cannot be re-driven, and counting reclaims
// would bury an event that a backlogged or redelivered message would still
// complete. So while the message may still be on the queue (younger than
// MessageLifetime) the record is postponed without counting a reclaim,
// looking again after its age (1 minute to 1 hour). Past that, it reports
// false and the caller counts reclaims and buries as before.
func (h *Handler) awaitMessage(ctx context.Context, rec ledger.Record, now time.Time, log *slog.Logger) (bool, error) {
	age := now.Sub(rec.CreatedAt)
	if rec.CreatedAt.IsZero() || age >= MessageLifetime {
		return false, nil
	}
	if _, err := h.Ledger.Postpone(ctx, rec, now.Add(min(max(age, time.Minute), time.Hour))); err != nil {
		return false, err
	}
	h.Metrics.Count("AwaitingMessage")
	log.InfoContext(ctx, "payload not stored; waiting for the event's message, which may still be on the queue",
		"age_s", int(age.Seconds()), "attempts", rec.Attempts)
	return true, nil
}
