package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// Unrouted policies: what happens to an event no route matches.
const (
	UnroutedDone = "done" // mark it done (default), with its own outcome, metric and a warning
	UnroutedFail = "fail" // mark it dead, alarmed, replayable once a route exists
)

// Outcome names what happened to one message, for logs and metrics. The
// identifiers read as the logged names.
type Outcome string

// The processor's outcomes.
const (
	Processed       Outcome = "processed"
	Unrouted        Outcome = "unrouted"
	AlreadyDone     Outcome = "already_done"
	AlreadyDead     Outcome = "already_dead"
	LeasedElsewhere Outcome = "leased_elsewhere"
	FailedRetry     Outcome = "failed_retry"
	Dead            Outcome = "dead"
	// DeadIndeterminate: dead because a step cannot be proven done or not.
	DeadIndeterminate Outcome = "dead_indeterminate"
	LeaseLost         Outcome = "lease_lost"
	NotFound          Outcome = "not_found" // the record expired: nothing left to do
	// Parked: the message is not its record's event (see park).
	Parked    Outcome = "parked"
	Malformed Outcome = "malformed"
	Error     Outcome = "error"
	// Stale: an InOrder route with SkipStale skipped the event; its record
	// is done, with the reason.
	Stale Outcome = "stale"
	// StaleAfterRun: Stale after an earlier run that may have applied it.
	StaleAfterRun Outcome = "stale_after_run"
	// ResourceBusy: another run held the resource past OrderWait; the event
	// is given back.
	ResourceBusy Outcome = "resource_busy"
)

// The processor's verbs. Each but park and storeBody ends a claimed run
// with one ledger write:
//
//   - complete: done (ledger.Complete).
//   - fail: the handler failed; retried after a backoff, counting against
//     MaxAttempts (ledger.Fail).
//   - giveBack: cut short before the handler ran; retried without spending
//     MaxAttempts (ledger.Release).
//   - bury: dead, alarmed, replayable (ledger.Bury).
//   - skip: stale; done without running (ledger.Skip).
//   - park: the message is not its record's event; never applied, it goes
//     back to the queue, then to the dead-letter queue.
//   - storeBody: copy the message's body into the ledger for whoever
//     finishes the event later (ledger.EnsurePayload).
//
// The body is stored only before the claim of a redelivered message, and
// before an outcome that leaves the event to someone else lets its message
// go (finish).

// metrics names the counts an outcome adds to. The happy path adds none:
// the receiver counts events, and SQS counts deleted messages. What needs
// a person also counts NeedsOperator, the one metric its alarm watches.
func (o Outcome) metrics() []string {
	switch o {
	case Processed:
		return nil
	case Unrouted:
		return []string{"Unrouted"}
	case Dead:
		return []string{"Dead", "NeedsOperator"}
	case DeadIndeterminate:
		return []string{"Dead", "Indeterminate", "NeedsOperator"}
	case AlreadyDone, AlreadyDead, NotFound:
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
	case Processed, Unrouted, AlreadyDone, AlreadyDead, Dead, DeadIndeterminate, NotFound, Stale, StaleAfterRun:
		return true
	}
	return false
}

// storesBody reports whether the outcome leaves the event for someone else
// to finish (SQS, the reclaimer, the operator), so its body must be in the
// ledger before the message goes. A parked message's body is not its
// record's; a malformed one has no event.
func (o Outcome) storesBody() bool {
	switch o {
	case AlreadyDead, Dead, DeadIndeterminate, FailedRetry, ResourceBusy, LeasedElsewhere, LeaseLost, Error:
		return true
	}
	return false
}

// Why a body is stored, for its log line.
const (
	whyRedelivered = "message redelivered"
	whyDead        = "event is dead"
	whyGoingDead   = "event going dead"
	whyFailed      = "handler failed"
	whyInterrupted = "run interrupted"
	whyReturned    = "message returned to the queue"
)

// storeBody stores the event's body in the ledger unless a payload is
// there. So HOOKLEDGER_PAYLOAD=on-trouble, and the receiver's payload write
// beside its enqueue, lose nothing: an event that may need a re-drive has
// its body in the ledger, or its message on the queue. A body in the S3
// store, or one the message omits, is stored already. EnsurePayload writes
// nothing for a record done or gone, or another event's (ErrNotThisEvent).
func (h *Handler) storeBody(ctx context.Context, m queue.Message, log *slog.Logger, why string) error {
	if m.Ref != "" || m.BodyOmitted {
		return nil
	}
	stored, err := h.Ledger.EnsurePayload(ctx, m.Key(), m.Body, identity(m))
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

// park answers a message that is not its record's event (ErrNotThisEvent):
// an earlier event's under a reused key, say a redriven dead letter, or one
// with another type or no digest. It is never applied, and the record is
// left as it was. Unacknowledged, it reaches the dead-letter queue after
// maxReceiveCount deliveries; there the reclaimer and replay --dlq leave it
// until the operator drops it. The log names both identities, never the
// body.
func (h *Handler) park(ctx context.Context, m queue.Message, err error, receives int) end {
	var se *ledger.StateError
	errors.As(err, &se)
	var rec ledger.Record
	if se != nil {
		rec = se.Record
	}
	why := rec.Mismatch(identity(m))
	h.logger().ErrorContext(ctx, "message is not the event its record holds: parked, never applied; it goes to the dead-letter queue after maxReceiveCount deliveries",
		"source", m.Source, "tenant", m.Tenant, "event_id", m.ID, "status", string(rec.Status), "reason", why,
		"message_sha256", m.SHA256, "record_sha256", rec.BodySHA256, "message_type", m.Type, "record_type", rec.EventType,
		"receive_count", receives, "trace_id", trace.ID(m.Trace))
	return end{out: Parked, err: fmt.Errorf("not the event the ledger holds under this key (%s): %w", why, err)}
}

// fail records the handler's retryable failure; the event is due again
// after retryAfter.
func (h *Handler) fail(lease ledger.Lease, err error, cause string, retryAfter time.Duration, changes ...ledger.StepChange) end {
	return end{out: FailedRetry, err: err, why: whyFailed, write: func(ctx context.Context) error {
		_, err := h.Ledger.Fail(ctx, lease, cause, retryAfter, changes...)
		return err
	}}
}

// giveBack hands the event back after the infrastructure cut its run short
// (the body unreadable, the resource busy). The run counts as interrupted,
// not against MaxAttempts; the reclaimer bounds such trouble by time.
func (h *Handler) giveBack(lease ledger.Lease, out Outcome, cause error) end {
	return end{out: out, err: cause, why: whyInterrupted, write: func(ctx context.Context) error {
		_, err := h.Ledger.Release(ctx, lease, cause.Error(), backoff(lease.Record.Interrupted))
		return err
	}}
}

// bury marks the leased event dead. Its message is deleted, and the replay
// that follows needs the body: finish stores it first, and if it cannot,
// the event is not buried (the message stays, the lease runs out).
func (h *Handler) bury(lease ledger.Lease, out Outcome, err error, cause string, changes ...ledger.StepChange) end {
	return end{out: out, err: err, why: whyGoingDead, write: func(ctx context.Context) error {
		_, err := h.Ledger.Bury(ctx, lease, cause, changes...)
		return err
	}}
}

// skip marks a stale event done without running it, saying whether an
// earlier run may have applied it.
func (h *Handler) skip(lease ledger.Lease, stale *engine.StaleError) end {
	out := Stale
	if stale.EarlierRun = lease.Record.EarlierRun(); stale.EarlierRun != "" {
		out = StaleAfterRun
	}
	return end{out: out, err: stale, write: func(ctx context.Context) error {
		_, err := h.Ledger.Skip(ctx, lease, stale.Error())
		return err
	}}
}

// writeFailed is how a delivery ends when its settling write was refused.
// A lost lease means another worker owns the event now and finishes it;
// anything else is retried. Either way the message returns to the queue.
func writeFailed(err error) end {
	if errors.Is(err, ledger.ErrLeaseLost) {
		return end{out: LeaseLost, err: err, why: whyReturned}
	}
	return end{out: Error, err: err, why: whyReturned}
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

// unrouted settles an event no route matches: done (default) or dead, each
// with its own outcome and metric, never silently.
func (h *Handler) unrouted(lease ledger.Lease, m queue.Message, typ string) end {
	if h.Unrouted == UnroutedFail {
		cause := fmt.Sprintf("no route for source %q, type %q (HOOKLEDGER_UNROUTED=fail); add one in effect/ and replay", m.Source, typ)
		return h.bury(lease, Dead, errors.New(cause), cause)
	}
	return h.complete(lease, Unrouted, fmt.Errorf("no route for source %q, type %q: marked done without effects (HOOKLEDGER_UNROUTED=fail makes it dead instead)", m.Source, typ))
}
