// Package processor is the processor Lambda's handler: it consumes SQS
// batches, takes a lease on each event in the ledger, runs the user's
// handler for it and records the outcome, reporting per-message failures so
// SQS retries only what failed.
package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// leases is the slice of the ledger the processor calls.
type leases interface {
	Claim(ctx context.Context, id ledger.ID, lease time.Duration) (ledger.Record, error)
	Extend(ctx context.Context, id ledger.ID, token string, lease time.Duration) (ledger.Record, error)
	Complete(ctx context.Context, id ledger.ID, token string) (ledger.Record, error)
	Fail(ctx context.Context, id ledger.ID, token, cause string, retryAfter time.Duration) (ledger.Record, error)
	Bury(ctx context.Context, id ledger.ID, token, cause string) (ledger.Record, error)
	Payload(ctx context.Context, id ledger.ID) ([]byte, error)
}

var _ leases = (*ledger.Ledger)(nil)

// Defaults for Handler's zero fields.
const (
	DefaultLease       = 60 * time.Second
	DefaultLeaseMargin = 5 * time.Second
	DefaultMaxAttempts = 5
)

// Handler is the processor. Its fields are its dependencies.
type Handler struct {
	Ledger leases
	Routes *Router
	// Lease is used when the context has no deadline (hookledger dev);
	// in Lambda the lease is the invocation's remaining time plus
	// LeaseMargin. Keep both below the queue's visibility timeout.
	Lease       time.Duration
	LeaseMargin time.Duration
	// MaxAttempts: a retryable failure on this attempt or later buries the
	// event instead (dead, alarmed, replayable).
	MaxAttempts int
	Log         *slog.Logger
	Metrics     *metric.Emitter // nil: no metrics
	Now         func() time.Time
}

// Outcome names what happened to one message, for logs and metrics.
type Outcome string

// The processor's outcomes.
const (
	Processed   Outcome = "processed"
	Unrouted    Outcome = "processed_unrouted"
	AlreadyDone Outcome = "already_done"
	AlreadyDead Outcome = "already_dead"
	Busy        Outcome = "leased_elsewhere"
	Retry       Outcome = "failed_retry"
	Buried      Outcome = "dead"
	LeaseLost   Outcome = "lease_lost"
	Gone        Outcome = "not_found"
	Malformed   Outcome = "malformed"
	Error       Outcome = "error"
)

// metric names the count an outcome adds to.
func (o Outcome) metric() string {
	switch o {
	case Processed, Unrouted:
		return "Processed"
	case Buried:
		return "Dead"
	case AlreadyDone, AlreadyDead, Gone:
		return "Redelivered"
	default:
		return "Failed"
	}
}

// acked reports whether the message is done with (deleted from the queue).
func (o Outcome) acked() bool {
	switch o {
	case Processed, Unrouted, AlreadyDone, AlreadyDead, Buried, Gone:
		return true
	}
	return false
}

// Handle processes an SQS batch and reports the messages to retry.
func (h *Handler) Handle(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
	outcomes := make([]Outcome, len(batch.Records))
	var wg sync.WaitGroup
	for i, msg := range batch.Records {
		wg.Go(func() { outcomes[i] = h.one(ctx, msg) })
	}
	wg.Wait()
	// An empty list, not null: AWS accepts both, MiniStack's event source
	// mapping only the list.
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, o := range outcomes {
		if !o.acked() {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: batch.Records[i].MessageId})
		}
	}
	return resp, nil
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

// lease is how long to hold an event: the invocation's remaining time plus
// a margin, or the configured lease outside Lambda.
func (h *Handler) lease(ctx context.Context) time.Duration {
	margin := h.LeaseMargin
	if margin <= 0 {
		margin = DefaultLeaseMargin
	}
	if dl, ok := ctx.Deadline(); ok {
		if rem := dl.Sub(h.now()); rem > 0 {
			return rem + margin
		}
	}
	if h.Lease > 0 {
		return h.Lease
	}
	return DefaultLease
}

func (h *Handler) one(ctx context.Context, msg events.SQSMessage) (out Outcome) {
	start := time.Now()
	log := h.logger().With("message_id", msg.MessageId)
	m, err := queue.Decode(msg.Body)
	if err == nil {
		log = log.With("source", m.Source, "tenant", m.Tenant, "event_key", m.Key, "event_type", m.Type)
	}
	var detail error
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "processor panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = Error
		}
		attrs := []any{"outcome", string(out), "duration_ms", time.Since(start).Milliseconds()}
		if detail != nil {
			attrs = append(attrs, "error", detail.Error())
		}
		level := slog.LevelInfo
		if !out.acked() || out == Buried {
			level = slog.LevelWarn
		}
		log.Log(ctx, level, "event", attrs...)
		h.Metrics.Count(out.metric())
	}()
	if err != nil {
		detail = err
		return Malformed // never acked: SQS moves it to the DLQ after maxReceiveCount
	}
	out, detail = h.process(ctx, m)
	return out
}

func (h *Handler) process(ctx context.Context, m queue.Message) (Outcome, error) {
	id := m.ID()
	rec, err := h.Ledger.Claim(ctx, id, h.lease(ctx))
	var se *ledger.StateError
	switch {
	case errors.As(err, &se) && se.Record.Status == ledger.Done:
		return AlreadyDone, nil
	case errors.As(err, &se) && se.Record.Status == ledger.Dead:
		return AlreadyDead, nil
	case errors.Is(err, ledger.ErrLeased):
		return Busy, err
	case errors.Is(err, ledger.ErrNotFound):
		return Gone, err // expired past retention: nothing left to do
	case err != nil:
		return Error, err
	}
	inject.Crash(inject.ProcessorAfterClaim)
	token := rec.LeaseOwner

	body := m.Body
	if body == nil && m.SHA256 != "" {
		if body, err = h.Ledger.Payload(ctx, id); err != nil {
			return h.retry(ctx, id, token, rec, fmt.Errorf("read payload: %w", err))
		}
	}
	handler := h.Routes.Lookup(m.Source, m.Type)
	if handler == nil {
		if _, err := h.Ledger.Complete(ctx, id, token); err != nil {
			return h.completeFailed(err)
		}
		return Unrouted, nil
	}
	ev := &Event{
		Source: m.Source, Tenant: m.Tenant, Key: m.Key, Type: m.Type, Body: body, Attempt: rec.Attempts,
		ReceivedAt: time.UnixMilli(m.ReceivedAt).UTC(),
		extend: func(ctx context.Context, d time.Duration) error {
			_, err := h.Ledger.Extend(ctx, id, token, d)
			return err
		},
	}
	if err := safeRun(ctx, handler, ev); err != nil {
		if IsPermanent(err) {
			if _, berr := h.Ledger.Bury(ctx, id, token, err.Error()); berr != nil {
				return h.completeFailed(berr)
			}
			return Buried, err
		}
		return h.retry(ctx, id, token, rec, err)
	}
	inject.Crash(inject.ProcessorAfterEffect)
	if _, err := h.Ledger.Complete(ctx, id, token); err != nil {
		return h.completeFailed(err)
	}
	inject.Crash(inject.ProcessorAfterDone)
	return Processed, nil
}

// safeRun runs the user's handler, turning a panic into an error.
func safeRun(ctx context.Context, h EventHandler, ev *Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return h.HandleEvent(ctx, ev)
}

// retry records a retryable failure, or buries the event when its attempts
// are spent.
func (h *Handler) retry(ctx context.Context, id ledger.ID, token string, rec ledger.Record, cause error) (Outcome, error) {
	max := h.MaxAttempts
	if max <= 0 {
		max = DefaultMaxAttempts
	}
	if rec.Attempts >= max {
		msg := fmt.Sprintf("attempts exhausted (%d): %v", rec.Attempts, cause)
		if _, err := h.Ledger.Bury(ctx, id, token, msg); err != nil {
			return h.completeFailed(err)
		}
		return Buried, cause
	}
	if _, err := h.Ledger.Fail(ctx, id, token, cause.Error(), backoff(rec.Attempts)); err != nil {
		return h.completeFailed(err)
	}
	return Retry, cause
}

// backoff is when the reclaimer should re-drive a failed event if SQS has
// not: 30s doubling per attempt, at most 15 minutes.
func backoff(attempt int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < attempt && d < 15*time.Minute; i++ {
		d *= 2
	}
	return min(d, 15*time.Minute)
}

// completeFailed classifies a refused final write: a lost lease means
// another worker owns the event now (leave the message for SQS to retry, the
// ledger decides who finishes); anything else is retried.
func (h *Handler) completeFailed(err error) (Outcome, error) {
	if errors.Is(err, ledger.ErrLeaseLost) {
		return LeaseLost, err
	}
	return Error, err
}
