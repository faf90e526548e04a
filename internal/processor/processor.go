// Package processor is the processor Lambda's handler: for each SQS
// message it leases the event in the ledger, runs the user's handler and
// records the outcome, reporting per-message failures so SQS retries only
// what failed.
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
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// leases is the slice of the ledger the processor calls.
type leases interface {
	ClaimEvent(ctx context.Context, id ledger.Key, d time.Duration, ev ledger.Identity) (ledger.Lease, error)
	Extend(ctx context.Context, lease ledger.Lease, d time.Duration) (ledger.Lease, error)
	SaveSteps(ctx context.Context, lease ledger.Lease, changes ...ledger.StepChange) (ledger.Record, error)
	Complete(ctx context.Context, lease ledger.Lease, changes ...ledger.StepChange) (ledger.Record, error)
	Fail(ctx context.Context, lease ledger.Lease, cause string, retryAfter time.Duration, changes ...ledger.StepChange) (ledger.Record, error)
	Release(ctx context.Context, lease ledger.Lease, cause string, retryAfter time.Duration, changes ...ledger.StepChange) (ledger.Record, error)
	Bury(ctx context.Context, lease ledger.Lease, cause string, changes ...ledger.StepChange) (ledger.Record, error)
	PayloadOf(ctx context.Context, rec ledger.Record) ([]byte, error)
	EnsurePayload(ctx context.Context, id ledger.Key, body []byte, ev ledger.Identity) (bool, error)
	TakeOrder(ctx context.Context, lease ledger.Lease, resource string, position int64, force bool) (ledger.Taken, error)
	Skip(ctx context.Context, lease ledger.Lease, reason string) (ledger.Record, error)
}

var _ leases = (*ledger.Ledger)(nil)

// Defaults for Handler's zero fields.
const (
	DefaultLease       = 60 * time.Second
	DefaultLeaseMargin = 5 * time.Second
	DefaultMaxAttempts = engine.DefaultMaxAttempts
	// DefaultOrderWait is how long an InOrder run waits in process for a
	// resource another run holds, before it gives the event back. Runs are
	// short, and a retry waits for the visibility timeout.
	DefaultOrderWait = 2 * time.Second
)

// Handler is the processor. Its fields are its dependencies.
type Handler struct {
	Ledger leases
	Routes engine.Routes
	// Lease is used when the context has no deadline (hookledger dev). In
	// Lambda the lease is the invocation's remaining time plus LeaseMargin.
	// Keep both below the queue's visibility timeout.
	Lease       time.Duration
	LeaseMargin time.Duration
	// MaxAttempts bounds the handler's failures of an event: the
	// MaxAttempts-th buries it. Interrupted runs do not count; the
	// reclaimer bounds them by time.
	MaxAttempts int
	// Unrouted is UnroutedDone (default) or UnroutedFail.
	Unrouted string
	// Store reads bodies kept in the S3 payload store (nil: none; a message
	// that references one then fails).
	Store objects
	// Forward publishes what handlers forward (nil: Forward fails
	// permanently, saying so).
	Forward publisher
	Log     *slog.Logger
	Metrics *metric.Emitter // nil: no metrics
	Now     func() time.Time
	// Point is called at the named crash points (nil: inject.Crash, a no-op
	// outside proof builds). Tests set it to stop a run as a crash would.
	Point func(point string)
	// OrderWait is how long a run waits for a busy resource (0:
	// DefaultOrderWait).
	OrderWait time.Duration
	Trace     *trace.Tracer // spans (nil: none)
}

// Handle processes an SQS batch and reports the messages to retry.
func (h *Handler) Handle(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
	outcomes := make([]Outcome, len(batch.Records))
	sp := h.batchSpan(ctx, batch)
	bctx := trace.With(ctx, sp)
	var wg sync.WaitGroup
	for i, msg := range batch.Records {
		wg.Go(func() { outcomes[i] = h.one(bctx, msg) })
	}
	wg.Wait()
	sp.End()
	h.Trace.Flush(ctx)
	// An empty list, not null: AWS accepts both, MiniStack only the list.
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, o := range outcomes {
		if !o.acked() {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: batch.Records[i].MessageId})
		}
	}
	return resp, nil
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
	// event names the event on its one info line, billed by the byte for
	// every event; log adds the message id, which only trouble needs.
	m, err := queue.Decode(msg.Body)
	m.Trace = msg.Attributes[queue.TraceAttribute]
	event := h.logger()
	if tid := trace.ID(m.Trace); tid != "" {
		event = event.With("trace_id", tid)
	}
	if err == nil {
		event = event.With("source", m.Source, "tenant", m.Tenant, "event_id", m.ID, "event_type", m.Type)
	}
	log := event.With("message_id", msg.MessageId)
	sp := eventSpan(ctx, msg.MessageId, msg.EventSourceARN, m)
	ctx = trace.With(ctx, sp)
	var detail error
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "processor panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = Error
		}
		endEvent(sp, out, detail)
		attrs := []any{"outcome", string(out), "duration_ms", time.Since(start).Milliseconds()}
		if detail != nil {
			attrs = append(attrs, "error", detail.Error())
		}
		level := slog.LevelInfo
		switch {
		case out == Dead || out == DeadIndeterminate:
			level = slog.LevelError
		case !out.acked() && out != ResourceBusy || out == Unrouted || out == StaleAfterRun:
			level = slog.LevelWarn
		}
		if level == slog.LevelInfo {
			event.Log(ctx, level, "event", attrs...)
		} else {
			log.Log(ctx, level, "event", attrs...)
		}
		h.Metrics.Count(out.metrics()...)
	}()
	if err != nil {
		detail = err
		return Malformed // never acked: SQS moves it to the DLQ after maxReceiveCount
	}
	receives := receiveCount(msg)
	out, detail = h.finish(ctx, m, log, receives, h.process(ctx, m, receives, log))
	return out
}

// process claims the message's event, runs its handler and says how the
// delivery ends; finish carries that out.
func (h *Handler) process(ctx context.Context, m queue.Message, receives int, log *slog.Logger) end {
	if receives > 1 {
		// An earlier delivery did not finish, and this one may die too.
		// Store the body before anything else, so a message that comes
		// back even once has its body in the ledger: the reclaimer
		// re-drives only what the ledger holds. A failure is not fatal:
		// the message stays the carrier.
		if err := h.storeBody(ctx, m, log, whyRedelivered); errors.Is(err, ledger.ErrNotThisEvent) {
			return h.park(ctx, m, err, receives)
		}
	}
	lease, e, ok := h.claim(ctx, m, receives)
	if !ok {
		return e
	}
	h.point(inject.ProcessorAfterClaim)
	body, err := h.body(ctx, m, lease)
	if err != nil {
		return h.giveBack(lease, FailedRetry, err)
	}
	// Routed by the record's type: the claim made sure the message names
	// the same event.
	typ := lease.Record.EventType
	handler := h.Routes.Lookup(m.Source, typ)
	if handler == nil {
		return h.unrouted(lease, m, typ)
	}
	return h.attempt(ctx, m, lease, handler, body, log)
}

// claim leases the message's event, or says how the delivery ends when it
// cannot (ok false). Its one conditional write also requires the record to
// be this message's event.
func (h *Handler) claim(ctx context.Context, m queue.Message, receives int) (lease ledger.Lease, e end, ok bool) {
	lease, err := h.Ledger.ClaimEvent(ctx, m.Key(), h.lease(ctx), identity(m))
	var se *ledger.StateError
	switch {
	case err == nil:
		return lease, end{}, true
	case errors.Is(err, ledger.ErrNotThisEvent):
		return lease, h.park(ctx, m, err, receives), false
	case errors.As(err, &se) && se.Record.Status == ledger.Done:
		return lease, end{out: AlreadyDone}, false
	case errors.As(err, &se) && se.Record.Status == ledger.Dead:
		// Buried while this message was queued: the replay that follows
		// needs the body.
		return lease, end{out: AlreadyDead, why: whyDead}, false
	case errors.Is(err, ledger.ErrLeased):
		return lease, end{out: LeasedElsewhere, err: err, why: whyReturned}, false
	case errors.Is(err, ledger.ErrNotFound):
		return lease, end{out: NotFound, err: err}, false
	}
	return lease, end{out: Error, err: err, why: whyReturned}, false
}

// body is the event's body: from the message, the payload store (Ref), or
// the ledger when the message left it out for its size.
func (h *Handler) body(ctx context.Context, m queue.Message, lease ledger.Lease) ([]byte, error) {
	switch {
	case !m.BodyOmitted:
		return m.Body, nil // an empty one included
	case m.Ref != "":
		if h.Store == nil {
			return nil, fmt.Errorf("read payload: the body is in the payload store (%s) but no store is configured (HOOKLEDGER_PAYLOAD_BUCKET)", m.Ref)
		}
		body, err := h.Store.Get(ctx, m.Ref)
		if err != nil {
			return nil, fmt.Errorf("read payload: %w", err)
		}
		return body, nil
	}
	body, err := h.Ledger.PayloadOf(ctx, lease.Record)
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	return body, nil
}

// attempt runs the event's handler under its lease and judges the run.
func (h *Handler) attempt(ctx context.Context, m queue.Message, lease ledger.Lease, handler engine.Handler, body []byte, log *slog.Logger) end {
	w := &work{h: h, lease: lease, log: log}
	run := engine.New(engine.Config{
		Store: w, Recorded: recorded(lease.Record.Steps), Attempt: lease.Record.Attempts,
		Key: func(name string) string { return engine.DownstreamKey(m.Source, m.Tenant, m.ID, name) }, Point: h.point,
		Extend: w.extend, Forward: h.forwarder(), Guard: w, Trace: stepSpans(trace.SpanOf(ctx), lease.Record.Attempts),
	})
	herr := safeRun(ctx, handler, engine.Event{
		Source: m.Source, Tenant: m.Tenant, ID: m.ID, Type: lease.Record.EventType, Body: body, Attempt: lease.Record.Attempts,
		ReceivedAt: receivedAt(m, lease.Record),
	}, run)
	j := run.Judge(herr, lease.Record.Failures, h.MaxAttempts, lease.Record.Attempts)
	changes := ledgerChanges(run.Pending())
	// The writes go under the lease as the run left it (extended, steps
	// saved); backoffs count from the claim's record.
	held := w.lease
	switch j.Verdict {
	case engine.Abandon:
		return end{out: LeaseLost, err: j.Err, why: whyReturned} // the worker that took the event over finishes it
	case engine.GiveBack:
		var busy *engine.BusyError
		errors.As(herr, &busy)
		return h.giveBack(held, ResourceBusy, busy)
	case engine.Skip:
		var stale *engine.StaleError
		errors.As(herr, &stale)
		return h.skip(held, stale)
	case engine.Complete:
		h.point(inject.ProcessorAfterEffect)
		return h.complete(held, Processed, nil, changes...)
	case engine.Bury:
		out := Dead
		if j.Indeterminate {
			out = DeadIndeterminate
		}
		return h.bury(held, out, j.Err, j.Cause, changes...)
	}
	return h.fail(held, herr, j.Cause, backoff(lease.Record.Failures+1), changes...)
}

// end is how one message's delivery ends: its outcome, the error to log,
// the ledger write that settles the event (nil: none) and, if the outcome
// stores the body, why.
type end struct {
	out   Outcome
	err   error
	write func(ctx context.Context) error
	why   string
}

// finish ends a delivery at one point. An outcome that leaves the event to
// someone else stores the body first; then the settling write runs. A
// message that would be deleted without its body stays on the queue
// instead. A failed write returns the message to the queue.
func (h *Handler) finish(ctx context.Context, m queue.Message, log *slog.Logger, receives int, e end) (Outcome, error) {
	if e.out.storesBody() {
		if err := h.storeBody(ctx, m, log, e.why); err != nil && e.out.acked() {
			if errors.Is(err, ledger.ErrNotThisEvent) && e.write == nil {
				p := h.park(ctx, m, err, receives)
				return p.out, p.err
			}
			if e.write != nil {
				err = fmt.Errorf("keep the payload before marking the event dead: %w", err)
			}
			return h.finish(ctx, m, log, receives, end{out: Error, err: err, why: whyReturned})
		}
	}
	if e.write == nil {
		return e.out, e.err
	}
	if err := e.write(ctx); err != nil {
		return h.finish(ctx, m, log, receives, writeFailed(err))
	}
	if e.out == Processed {
		h.point(inject.ProcessorAfterDone)
	}
	return e.out, e.err
}

// complete marks the event done.
func (h *Handler) complete(lease ledger.Lease, out Outcome, err error, changes ...ledger.StepChange) end {
	return end{out: out, err: err, write: func(ctx context.Context) error {
		_, err := h.Ledger.Complete(ctx, lease, changes...)
		return err
	}}
}
