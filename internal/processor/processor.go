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
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/internal/forward"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
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

// objects reads bodies from the S3 payload store.
type objects interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// publisher puts forwarded events on the forward bus (Event.Forward).
type publisher interface {
	Publish(ctx context.Context, f engine.Forwarded) (string, error)
}

var (
	_ leases    = (*ledger.Ledger)(nil)
	_ objects   = (*blob.Store)(nil)
	_ publisher = (*forward.Publisher)(nil)
)

// Defaults for Handler's zero fields.
const (
	DefaultLease       = 60 * time.Second
	DefaultLeaseMargin = 5 * time.Second
	DefaultMaxAttempts = engine.DefaultMaxAttempts
	// DefaultOrderWait is how long an InOrder run waits, in process, for
	// another run that holds its resource before it gives the event back.
	// Runs are short, and a retry waits for the visibility timeout.
	DefaultOrderWait = 2 * time.Second
)

// Unrouted policies: what happens to an event no route matches.
const (
	UnroutedDone = "done" // mark it done (default), with its own outcome, metric and a warning
	UnroutedFail = "fail" // mark it dead, alarmed, replayable once a route exists
)

// Handler is the processor. Its fields are its dependencies.
type Handler struct {
	Ledger leases
	Routes engine.Routes
	// Lease is used when the context has no deadline (hookledger dev);
	// in Lambda the lease is the invocation's remaining time plus
	// LeaseMargin. Keep both below the queue's visibility timeout.
	Lease       time.Duration
	LeaseMargin time.Duration
	// MaxAttempts is how many times the handler may fail an event: the
	// MaxAttempts-th retryable failure buries it. Runs that end without
	// the handler's answer (a crash, a timeout, a lost lease, an AWS error)
	// do not count; the reclaimer bounds them by time.
	MaxAttempts int
	// Unrouted is UnroutedDone (default) or UnroutedFail.
	Unrouted string
	// Store reads the bodies kept in the S3 payload store (nil: none
	// configured; a message that references one then fails).
	Store objects
	// Forward publishes what handlers forward (Event.Forward) to the
	// ForwardEventBus (nil: none, and Forward fails permanently, saying so).
	Forward publisher
	Log     *slog.Logger
	Metrics *metric.Emitter // nil: no metrics
	Now     func() time.Time
	// Point is called at the processor's and the steps' named crash points
	// (nil: inject.Crash, which does nothing outside proof builds). Tests
	// set it to stop a run dead at a point, as a crash would.
	Point func(point string)
	// OrderWait is how long a run waits for a busy resource (0 means
	// DefaultOrderWait); tests shorten it.
	OrderWait time.Duration
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

func (h *Handler) logger() *slog.Logger { return fallback.Logger(h.Log) }

func (h *Handler) now() time.Time { return fallback.Now(h.Now) }

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
	// event names the event on its info line, billed by the byte for every
	// event and the one info line of an accepted event (the receiver logs
	// its acceptance at debug); log adds the message, which only trouble
	// needs.
	event := h.logger()
	m, err := queue.Decode(msg.Body)
	if err == nil {
		event = event.With("source", m.Source, "tenant", m.Tenant, "event_id", m.ID, "event_type", m.Type)
	}
	log := event.With("message_id", msg.MessageId)
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

// receiveCount is SQS's ApproximateReceiveCount of the message, which the
// event source mapping hands over in the record's attributes (1 when
// absent).
func receiveCount(msg events.SQSMessage) int {
	n, err := strconv.Atoi(msg.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// identity is what a message says its event is.
func identity(m queue.Message) ledger.Identity {
	return ledger.Identity{Type: m.Type, BodySHA256: m.SHA256}
}

// process claims the message's event, runs its handler and says how the
// delivery ends; finish carries that out.
func (h *Handler) process(ctx context.Context, m queue.Message, receives int, log *slog.Logger) end {
	if receives > 1 {
		// An earlier delivery did not finish: its worker may have died
		// holding the message, and so may this one. Store the body before
		// anything else, the claim included. Then a message that comes back
		// even once has its body stored, even if every later delivery dies
		// too: the last one moves it to the DLQ, and the reclaimer
		// re-drives only what the ledger holds. A failure is not fatal: the
		// message stays the carrier.
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
	// Routed by the record's type: the record is the event's identity (the
	// claim made sure the message names the same).
	typ := lease.Record.EventType
	handler := h.Routes.Lookup(m.Source, typ)
	if handler == nil {
		return h.unrouted(lease, m, typ)
	}
	return h.attempt(ctx, m, lease, handler, body)
}

// claim leases the message's event, or says how the delivery ends when it
// cannot (ok false). The claim requires the record to be this message's
// event (its type and body digest), in its one conditional write.
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
		// Buried while this message was still queued (the reclaimer gave
		// up, or an operator redrove the DLQ): the replay that follows
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
func (h *Handler) attempt(ctx context.Context, m queue.Message, lease ledger.Lease, handler engine.Handler, body []byte) end {
	w := &work{h: h, lease: lease, log: h.logger().With("source", m.Source, "tenant", m.Tenant, "event_id", m.ID)}
	run := engine.New(engine.Config{
		Store: w, Recorded: recorded(lease.Record.Steps), Attempt: lease.Record.Attempts,
		Key: func(name string) string { return engine.DownstreamKey(m.Source, m.Tenant, m.ID, name) }, Point: h.point,
		Extend: w.extend, Forward: h.forwarder(), Guard: w,
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

// receivedAt is when the receiver accepted the event: the message says,
// or else its record's creation.
func receivedAt(m queue.Message, rec ledger.Record) time.Time {
	if m.ReceivedAt == 0 {
		return rec.CreatedAt
	}
	return time.UnixMilli(m.ReceivedAt).UTC()
}

// unrouted settles an event no route matches: done (default) or dead, each
// with its own outcome and metric, never silently.
func (h *Handler) unrouted(lease ledger.Lease, m queue.Message, typ string) end {
	if h.Unrouted == UnroutedFail {
		cause := fmt.Sprintf("no route for source %q, type %q (HOOKLEDGER_UNROUTED=fail); add one in effect/ and replay", m.Source, typ)
		return h.bury(lease, Dead, errors.New(cause), cause)
	}
	return h.complete(lease, Unrouted, fmt.Errorf("no route for source %q, type %q: marked done without effects (HOOKLEDGER_UNROUTED=fail makes it dead instead)", m.Source, typ))
}

// forwarder is the steps' Forward hook: nil without a forward bus.
func (h *Handler) forwarder() func(ctx context.Context, f engine.Forwarded) (string, error) {
	if h.Forward == nil {
		return nil
	}
	return h.Forward.Publish
}

func (h *Handler) point(p string) {
	if h.Point != nil {
		h.Point(p)
		return
	}
	inject.Crash(p)
}
