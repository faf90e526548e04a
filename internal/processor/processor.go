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

	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/forward"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// leases is the slice of the ledger the processor calls.
type leases interface {
	ClaimEvent(ctx context.Context, id ledger.ID, d time.Duration, ev ledger.Identity) (ledger.Lease, error)
	Extend(ctx context.Context, lease ledger.Lease, d time.Duration) (ledger.Lease, error)
	SaveSteps(ctx context.Context, lease ledger.Lease, changes ...ledger.StepChange) (ledger.Record, error)
	Complete(ctx context.Context, lease ledger.Lease, changes ...ledger.StepChange) (ledger.Record, error)
	Fail(ctx context.Context, lease ledger.Lease, cause string, retryAfter time.Duration, changes ...ledger.StepChange) (ledger.Record, error)
	Release(ctx context.Context, lease ledger.Lease, cause string, retryAfter time.Duration, changes ...ledger.StepChange) (ledger.Record, error)
	Bury(ctx context.Context, lease ledger.Lease, cause string, changes ...ledger.StepChange) (ledger.Record, error)
	PayloadOf(ctx context.Context, rec ledger.Record) ([]byte, error)
	EnsurePayload(ctx context.Context, id ledger.ID, body []byte, ev ledger.Identity) (bool, error)
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
	// DefaultOrderWait is how long a run of an InOrder route waits, in
	// process, for another event's run that holds the same resource,
	// before it hands its event back to be retried later: runs are short,
	// and a retry waits for the queue's visibility timeout.
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
	// retryable failure that is its MaxAttempts-th buries it instead (dead,
	// alarmed, replayable). Runs that end without the handler's answer (a
	// crash, a timeout, a lost lease, an AWS error) are not failures and do
	// not count; the reclaimer bounds them by time (see ledger's Runs).
	MaxAttempts int
	// Unrouted is UnroutedDone (default) or UnroutedFail.
	Unrouted string
	// Store reads the bodies kept in the S3 payload store (nil: none
	// configured; a message that references one then fails).
	Store objects
	// Forward publishes what handlers forward (Event.Forward) to the bus
	// the template's ForwardEventBus names (nil: none; Forward then fails
	// permanently, saying so).
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

// Outcome names what happened to one message, for logs and metrics.
type Outcome string

// The processor's outcomes.
const (
	Processed     Outcome = "processed"
	Unrouted      Outcome = "unrouted"
	AlreadyDone   Outcome = "already_done"
	AlreadyDead   Outcome = "already_dead"
	Busy          Outcome = "leased_elsewhere"
	Retry         Outcome = "failed_retry"
	Buried        Outcome = "dead"
	Indeterminate Outcome = "dead_indeterminate"
	LeaseLost     Outcome = "lease_lost"
	Gone          Outcome = "not_found"
	// Parked: the message is not the event its record holds (an earlier
	// event's under a key used again, a duplicate's with another type): it
	// is never applied, and goes back to the queue untouched until SQS moves
	// it to the dead-letter queue, where it waits for the operator.
	Parked    Outcome = "parked"
	Malformed Outcome = "malformed"
	Error     Outcome = "error"
	// Stale: an InOrder route with SkipStale skipped the event, older than
	// a state of its resource that a newer event applied; its record is
	// done, with the reason.
	Stale Outcome = "stale"
	// StaleAfterRun is Stale for an event whose record shows an earlier run
	// that may have applied it (killed after its effect, before recording
	// it): skipped now, but not "never ran" (ledger.Record.EarlierRun).
	StaleAfterRun Outcome = "stale_after_run"
	// ResourceBusy: another event's run held the event's resource for
	// longer than the processor waits (OrderWait); the event is given back
	// (failed, not counted against MaxAttempts) and retried later.
	ResourceBusy Outcome = "resource_busy"
)

// metrics names the counts an outcome adds to.
// The happy path (processed) adds to none: see receiver's metrics; the
// queue's NumberOfMessagesDeleted counts what the processor is done with.
// What needs a person also counts NeedsOperator, the one metric its alarm
// watches.
func (o Outcome) metrics() []string {
	switch o {
	case Processed:
		return nil
	case Unrouted:
		return []string{"Unrouted"}
	case Buried:
		return []string{"Dead", "NeedsOperator"}
	case Indeterminate:
		return []string{"Dead", "Indeterminate", "NeedsOperator"}
	case AlreadyDone, AlreadyDead, Gone:
		return []string{"Redelivered"}
	case Parked:
		return []string{"Parked", "NeedsOperator"}
	case Stale:
		return []string{"Stale"}
	case StaleAfterRun:
		return []string{"StaleAfterRun"}
	case ResourceBusy:
		return []string{"ResourceBusy"}
	default:
		return []string{"Failed"}
	}
}

// acked reports whether the message is done with (deleted from the queue).
func (o Outcome) acked() bool {
	switch o {
	case Processed, Unrouted, AlreadyDone, AlreadyDead, Buried, Indeterminate, Gone, Stale, StaleAfterRun:
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
	// event names the event on its info line, billed by the byte for every
	// event and the one info line of an accepted event (the receiver logs
	// its acceptance at debug); log adds the message, which only trouble
	// needs.
	event := h.logger()
	m, err := queue.Decode(msg.Body)
	if err == nil {
		event = event.With("source", m.Source, "tenant", m.Tenant, "event_key", m.Key, "event_type", m.Type)
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
		case out == Buried || out == Indeterminate:
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
	out, detail = h.process(ctx, m, receiveCount(msg))
	if !out.acked() && out != Retry && out != Parked && out != ResourceBusy { // retry and busy kept it already; a parked body is not the record's
		// The message goes back to the queue: an event in trouble, which
		// may yet need a re-drive from the ledger.
		h.keep(ctx, m, log, "message returned to the queue")
	}
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

// keep stores the event's body in the ledger unless a payload is there:
// before its message may leave the queue with the event not done (failed,
// dead), when its message was redelivered (an earlier worker may have died
// with it), or when the message goes back to the queue. It is what makes
// HOOKLEDGER_PAYLOAD=on-trouble, and the receiver's payload write in
// parallel with its enqueue, lose nothing: every event that may need a
// re-drive from the ledger has its body there, or its message is still on
// the queue. Bodies in the S3 payload store were written by the receiver
// before its answer and need nothing here.
//
// An empty body is kept as an empty payload; a message that does not carry
// its body (queue.Message.BodyOmitted) has nothing to keep, and the body it
// refers to is stored already. EnsurePayload writes nothing for a record
// that is done or gone, and nothing from a message that is not the record's
// event (its error, ErrNotThisEvent, is returned for the caller to park the
// message).
func (h *Handler) keep(ctx context.Context, m queue.Message, log *slog.Logger, why string) error {
	if m.Ref != "" || m.BodyOmitted {
		return nil
	}
	stored, err := h.Ledger.EnsurePayload(ctx, m.ID(), m.Body, identity(m))
	if errors.Is(err, ledger.ErrNotThisEvent) {
		return err
	}
	if err != nil {
		log.WarnContext(ctx, "could not keep the payload of an event in trouble", "reason", why, "error", err.Error())
		return err
	}
	if stored {
		log.InfoContext(ctx, "payload kept for an event in trouble", "reason", why)
		h.Metrics.Count("PayloadKept")
	}
	return nil
}

// identity is what a message says its event is.
func identity(m queue.Message) ledger.Identity {
	return ledger.Identity{Type: m.Type, BodySHA256: m.SHA256}
}

// park answers a message that is not the event its record holds (the
// claim, or the keeping of its body, was refused with ErrNotThisEvent): an
// earlier event's message under a key used again after its record expired
// (a dead letter redriven, say), or one that carries another type or no
// digest. It is never applied and the record is left as it was. The
// message is not acknowledged: SQS hands it back after its visibility
// timeout and, after maxReceiveCount deliveries, moves it to the
// dead-letter queue, where the reclaimer and hookledger replay --dlq leave
// it, saying why, until the operator drops it. The log line names both
// identities, never the body.
func (h *Handler) park(ctx context.Context, m queue.Message, err error, receives int) (Outcome, error) {
	var se *ledger.StateError
	errors.As(err, &se)
	var rec ledger.Record
	if se != nil {
		rec = se.Record
	}
	why := rec.Mismatch(identity(m))
	h.logger().ErrorContext(ctx, "message is not the event its record holds: parked, never applied; it goes to the dead-letter queue after maxReceiveCount deliveries",
		"source", m.Source, "tenant", m.Tenant, "event_key", m.Key, "status", string(rec.Status), "reason", why,
		"message_sha256", m.SHA256, "record_sha256", rec.BodySHA256, "message_type", m.Type, "record_type", rec.EventType,
		"receive_count", receives)
	return Parked, fmt.Errorf("not the event the ledger holds under this key (%s): %w", why, err)
}

func (h *Handler) process(ctx context.Context, m queue.Message, receives int) (Outcome, error) {
	id := m.ID()
	log := h.logger().With("source", m.Source, "tenant", m.Tenant, "event_key", m.Key)
	if receives > 1 {
		// An earlier delivery did not finish: its worker may have died
		// holding the message, and so may this one, anywhere from here on.
		// Keep the body before anything else, the claim included, so that
		// a message that comes back at least once has its body stored even
		// if every later delivery dies too (its last one moves it to the
		// DLQ, and the reclaimer can re-drive only what the ledger holds).
		// EnsurePayload stores nothing for a record that is done or gone,
		// the common case of a redelivery. A failure is not fatal: the
		// message stays the carrier. A message that is not the record's
		// event is parked at once.
		if err := h.keep(ctx, m, log, "message redelivered"); errors.Is(err, ledger.ErrNotThisEvent) {
			return h.park(ctx, m, err, receives)
		}
	}
	// The claim requires the record to be this message's event (its type
	// and body digest), in its one conditional write.
	lease, err := h.Ledger.ClaimEvent(ctx, id, h.lease(ctx), identity(m))
	var se *ledger.StateError
	switch {
	case errors.Is(err, ledger.ErrNotThisEvent):
		return h.park(ctx, m, err, receives)
	case errors.As(err, &se) && se.Record.Status == ledger.Done:
		return AlreadyDone, nil
	case errors.As(err, &se) && se.Record.Status == ledger.Dead:
		// Buried while this message was still on the queue (the reclaimer
		// gave up on it, or an operator redrove the DLQ): keep the body
		// for the replay that will follow before the message goes.
		if err := h.keep(ctx, m, log, "event is dead"); errors.Is(err, ledger.ErrNotThisEvent) {
			return h.park(ctx, m, err, receives)
		} else if err != nil {
			return Error, err
		}
		return AlreadyDead, nil
	case errors.Is(err, ledger.ErrLeased):
		return Busy, err
	case errors.Is(err, ledger.ErrNotFound):
		return Gone, err // expired past retention: nothing left to do
	case err != nil:
		return Error, err
	}
	h.point(inject.ProcessorAfterClaim)

	body := m.Body
	switch {
	case !m.BodyOmitted:
		// The message carries the body (an empty one included).
	case m.Ref != "":
		if h.Store == nil {
			return h.release(ctx, m, lease, fmt.Errorf("read payload: the body is in the payload store (%s) but no store is configured (HOOKLEDGER_PAYLOAD_BUCKET)", m.Ref))
		}
		if body, err = h.Store.Get(ctx, m.Ref); err != nil {
			return h.release(ctx, m, lease, fmt.Errorf("read payload: %w", err))
		}
	default: // left out of the message for its size: the ledger holds it
		if body, err = h.Ledger.PayloadOf(ctx, lease.Record); err != nil {
			return h.release(ctx, m, lease, fmt.Errorf("read payload: %w", err))
		}
	}
	// Routed by the record's type: the record is the event's identity (the
	// claim made sure the message names the same).
	typ := lease.Record.EventType
	handler := h.Routes.Lookup(m.Source, typ)
	if handler == nil {
		return h.unrouted(ctx, lease, m, typ)
	}
	w := &work{h: h, lease: lease, log: log}
	run := engine.New(engine.Config{
		Store: w, Recorded: recorded(lease.Record.Steps), Attempt: lease.Record.Attempts,
		Key: func(name string) string { return engine.DownstreamKey(m.Source, m.Tenant, m.Key, name) }, Point: h.point,
		Extend: w.extend, Forward: h.forwarder(), Guard: w,
	})
	herr := safeRun(ctx, handler, engine.Event{
		Source: m.Source, Tenant: m.Tenant, ID: m.Key, Type: typ, Body: body, Attempt: lease.Record.Attempts,
		ReceivedAt: receivedAt(m, lease.Record),
	}, run)
	j := run.Judge(herr, lease.Record.Failures, h.MaxAttempts, lease.Record.Attempts)
	changes := ledgerChanges(run.Pending())
	switch j.Verdict {
	case engine.Abandon:
		return LeaseLost, j.Err // another worker owns the event now and finishes it
	case engine.GiveBack:
		var busy *engine.BusyError
		errors.As(herr, &busy)
		return h.yield(ctx, m, w.lease, busy)
	case engine.Skip:
		var stale *engine.StaleError
		errors.As(herr, &stale)
		out := Stale
		if stale.EarlierRun = w.lease.Record.EarlierRun(); stale.EarlierRun != "" {
			out = StaleAfterRun
		}
		if _, err := h.Ledger.Skip(ctx, w.lease, stale.Error()); err != nil {
			return h.completeFailed(err)
		}
		return out, stale
	case engine.Complete:
		h.point(inject.ProcessorAfterEffect)
		if _, err := h.Ledger.Complete(ctx, w.lease, changes...); err != nil {
			return h.completeFailed(err)
		}
		h.point(inject.ProcessorAfterDone)
		return Processed, nil
	case engine.Bury:
		if err := h.bury(ctx, m, w.lease, j.Cause, changes...); err != nil {
			return h.completeFailed(err)
		}
		if j.Indeterminate {
			return Indeterminate, j.Err
		}
		return Buried, j.Err
	}
	// The message stays on the queue for SQS to redeliver; keep the body
	// too, for the reclaimer's re-drive once the message is gone.
	h.keep(ctx, m, log, "handler failed")
	if _, err := h.Ledger.Fail(ctx, w.lease, j.Cause, backoff(lease.Record.Failures+1), changes...); err != nil {
		return h.completeFailed(err)
	}
	return Retry, herr
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
func (h *Handler) unrouted(ctx context.Context, lease ledger.Lease, m queue.Message, typ string) (Outcome, error) {
	if h.Unrouted == UnroutedFail {
		cause := fmt.Sprintf("no route for source %q, type %q (HOOKLEDGER_UNROUTED=fail); add one in effect/ and replay", m.Source, typ)
		if err := h.bury(ctx, m, lease, cause); err != nil {
			return h.completeFailed(err)
		}
		return Buried, errors.New(cause)
	}
	if _, err := h.Ledger.Complete(ctx, lease); err != nil {
		return h.completeFailed(err)
	}
	return Unrouted, fmt.Errorf("no route for source %q, type %q: marked done without effects (HOOKLEDGER_UNROUTED=fail makes it dead instead)", m.Source, typ)
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

// work is one claimed event: the steps' store, writing under the lease,
// and the guard of an InOrder route.
type work struct {
	h     *Handler
	log   *slog.Logger
	mu    sync.Mutex
	lease ledger.Lease
	// extending makes ExtendLease calls take turns: each computes the new
	// end from the lease the one before it wrote, so two calls at once (a
	// heartbeat and the handler) cannot leave the shorter end last.
	extending sync.Mutex
}

func (w *work) Save(ctx context.Context, changes []engine.Change) error {
	w.mu.Lock()
	lease := w.lease
	w.mu.Unlock()
	rec, err := w.h.Ledger.SaveSteps(ctx, lease, ledgerChanges(changes)...)
	if errors.Is(err, ledger.ErrLeaseLost) {
		return fmt.Errorf("%w: %w", engine.ErrLeaseLost, err)
	}
	if err != nil {
		return err
	}
	// The lease carries the record as last written (an Extend may have
	// written since), so that a Fail knows a step started here without a
	// second write (see ledger.Fail).
	w.mu.Lock()
	if rec.Version > w.lease.Record.Version {
		w.lease.Record = rec
	}
	w.mu.Unlock()
	return nil
}

func (w *work) LeaseLost(err error) bool { return errors.Is(err, engine.ErrLeaseLost) }

func (w *work) extend(ctx context.Context, d time.Duration) error {
	w.extending.Lock()
	defer w.extending.Unlock()
	w.mu.Lock()
	lease := w.lease
	w.mu.Unlock()
	nl, err := w.h.Ledger.Extend(ctx, lease, d)
	if errors.Is(err, ledger.ErrLeaseLost) {
		return fmt.Errorf("%w: %w", engine.ErrLeaseLost, err)
	}
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.lease = nl
	w.mu.Unlock()
	return nil
}

func recorded(in map[string]ledger.Step) map[string]engine.State {
	out := make(map[string]engine.State, len(in))
	for k, v := range in {
		out[k] = engine.State{Status: engine.Status(v.Status), Result: v.Result}
	}
	return out
}

func ledgerChanges(in []engine.Change) []ledger.StepChange {
	out := make([]ledger.StepChange, len(in))
	for i, c := range in {
		out[i] = ledger.StepChange{Name: c.Name, Status: ledger.StepStatus(c.Status), Result: c.Result}
	}
	return out
}

// safeRun runs the user's handler, turning a panic into an error.
func safeRun(ctx context.Context, h engine.Handler, ev engine.Event, run *engine.Run) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v", p)
		}
	}()
	return h.Run(ctx, ev, run)
}

// yield gives the event back when its resource stayed busy: the run counts
// as interrupted (the handler never ran, and MaxAttempts is not spent), and
// the message goes back to the queue, whose next delivery finds the record
// failed and free to claim.
func (h *Handler) yield(ctx context.Context, m queue.Message, lease ledger.Lease, busy *engine.BusyError) (Outcome, error) {
	if out, err := h.release(ctx, m, lease, busy); out != Retry {
		return out, err
	}
	return ResourceBusy, busy
}

// release gives the event back after the infrastructure, not the handler,
// failed its run (the body could not be read): the run counts as
// interrupted, and the event's MaxAttempts is not spent on it. The
// reclaimer bounds such trouble by time.
func (h *Handler) release(ctx context.Context, m queue.Message, lease ledger.Lease, cause error) (Outcome, error) {
	h.keep(ctx, m, h.logger().With("source", m.Source, "tenant", m.Tenant, "event_key", m.Key), "run interrupted")
	if _, err := h.Ledger.Release(ctx, lease, cause.Error(), backoff(lease.Record.Interrupted)); err != nil {
		return h.completeFailed(err)
	}
	return Retry, cause
}

// bury marks the leased event dead after keeping its body: a dead event's
// message is deleted, and the replay that follows needs the body. If it
// cannot be kept, the event is not buried: the message stays for SQS to
// redeliver, and the lease runs out.
func (h *Handler) bury(ctx context.Context, m queue.Message, lease ledger.Lease, cause string, changes ...ledger.StepChange) error {
	if err := h.keep(ctx, m, h.logger().With("source", m.Source, "tenant", m.Tenant, "event_key", m.Key), "event going dead"); err != nil {
		return fmt.Errorf("keep the payload before marking the event dead: %w", err)
	}
	_, err := h.Ledger.Bury(ctx, lease, cause, changes...)
	return err
}

// backoff is when the reclaimer should re-drive a failed event if SQS has
// not: 30s doubling per failure (or interrupted run), at most 15 minutes.
func backoff(n int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < n && d < 15*time.Minute; i++ {
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
