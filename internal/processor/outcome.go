package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
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
	// Stale: an InOrder route with SkipStale skipped the event, older than
	// a state a newer event applied to its resource. Its record is done,
	// with the reason.
	Stale Outcome = "stale"
	// StaleAfterRun is Stale for an event whose record shows an earlier run
	// that may have applied it (ledger.Record.EarlierRun).
	StaleAfterRun Outcome = "stale_after_run"
	// ResourceBusy: another event's run held the resource longer than
	// OrderWait. The event is given back and retried later.
	ResourceBusy Outcome = "resource_busy"
)

// The processor's verbs. Each ends a claimed event's run with one ledger
// write, except park and store the body.
//
//   - complete: the event is done (ledger.Complete).
//   - fail: the handler failed. The event is retried after a backoff, and
//     the failure counts against MaxAttempts (ledger.Fail).
//   - give back: the run was cut short before the handler ran (the body
//     unreadable, the resource busy). Retried like fail, but MaxAttempts is
//     not spent (ledger.Release).
//   - bury: the event is dead, alarmed, replayable by the operator
//     (ledger.Bury).
//   - skip: the event is stale; done without running (ledger.Skip).
//   - park: the message is not its record's event. It is never applied and
//     goes back to the queue, then to the dead-letter queue.
//   - store the body: copy the message's body into the ledger
//     (ledger.EnsurePayload), for whoever finishes the event later.
//
// The body is stored at two moments only: before the claim of a
// redelivered message (process), and before an outcome that leaves the
// event to someone else (storesBody) lets its message go (finish).

// metrics names the counts an outcome adds to. The happy path adds to none:
// the receiver counts events, and the queue's NumberOfMessagesDeleted
// counts what the processor is done with. What needs a person also counts
// NeedsOperator, the one metric its alarm watches.
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
// to finish: SQS's next delivery, the reclaimer's re-drive or the
// operator's replay. Its body must be in the ledger before the message
// goes. A parked message's body is not its record's; a malformed one has
// no event.
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

// end is how one message's delivery ends: its outcome, the error to log,
// the ledger write that settles the event (nil: none) and why the body is
// stored, if the outcome stores it.
type end struct {
	out   Outcome
	err   error
	write func(ctx context.Context) error
	why   string
}

// finish ends a delivery at one point. If the outcome leaves the event to
// someone else, it stores the body first; then it makes the settling
// write. A message that would be deleted without its body stays on the
// queue instead. A write that fails returns the message to the queue, and
// is finished as that.
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

// storeBody stores the event's body in the ledger unless a payload is
// there. It is what makes HOOKLEDGER_PAYLOAD=on-trouble, and the
// receiver's payload write beside its enqueue, lose nothing: every event
// that may need a re-drive has its body in the ledger, or its message is
// still on the queue. A body in the S3 payload store needs nothing here;
// nor does a message without its body (queue.Message.BodyOmitted), whose
// body is stored already. An empty body is stored as an empty payload.
// EnsurePayload writes nothing for a record that is done or gone, and
// nothing from a message that is not its record's event (ErrNotThisEvent).
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

// park answers a message that is not its record's event: the claim, or
// storing its body, was refused with ErrNotThisEvent. It may be an earlier
// event's message under a key used again after its record expired (a dead
// letter redriven, say), or one with another type or no digest. It is
// never applied, and the record is left as it was. The message is not
// acknowledged: after maxReceiveCount deliveries SQS moves it to the
// dead-letter queue. There the reclaimer and hookledger replay --dlq leave
// it, saying why, until the operator drops it. The log line names both
// identities, never the body.
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
		"receive_count", receives)
	return end{out: Parked, err: fmt.Errorf("not the event the ledger holds under this key (%s): %w", why, err)}
}

// complete marks the event done.
func (h *Handler) complete(lease ledger.Lease, out Outcome, err error, changes ...ledger.StepChange) end {
	return end{out: out, err: err, write: func(ctx context.Context) error {
		_, err := h.Ledger.Complete(ctx, lease, changes...)
		return err
	}}
}

// fail records the handler's retryable failure; the event is due again
// after retryAfter.
func (h *Handler) fail(lease ledger.Lease, err error, cause string, retryAfter time.Duration, changes ...ledger.StepChange) end {
	return end{out: FailedRetry, err: err, why: whyFailed, write: func(ctx context.Context) error {
		_, err := h.Ledger.Fail(ctx, lease, cause, retryAfter, changes...)
		return err
	}}
}

// giveBack hands the event back after the infrastructure, not the handler,
// cut its run short: the body could not be read, or its resource stayed
// busy. The run counts as interrupted and MaxAttempts is not spent; the
// reclaimer bounds such trouble by time. The next delivery finds the
// record failed and free to claim.
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
