package reclaimer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// MessageLifetime is SQS's longest retention, which the template's queues use.
const MessageLifetime = 14 * 24 * time.Hour

// ExpiryMargin is at most how long before a record expires the reclaimer
// gives up on it (GiveUpAt): time for a reclaimer that is down then, and for
// the operator to act on the Dead alarm. A record that expired non-terminal
// would be lost without an alarm.
const ExpiryMargin = 24 * time.Hour

// GiveUpAt is when the reclaimer stops re-driving rec and marks it dead
// (zero: never, for a record that never expires): ExpiryMargin before it
// expires, or half way from the start of its window (creation or last
// replay) to its expiry if that is earlier.
//
// This bounds trouble that is not the handler's. Crashes, timeouts, lost
// leases and AWS errors do not spend MaxAttempts; they are re-driven, up to
// an hour apart, until GiveUpAt: by default as long as the sender would
// have retried. Such trouble is transient, and a short bound would kill
// events that patience completes; alarms tell the operator within minutes.
func GiveUpAt(rec ledger.Record) time.Time {
	if rec.ExpiresAt.IsZero() {
		return time.Time{}
	}
	start := rec.Since()
	margin := min(ExpiryMargin, rec.ExpiresAt.Sub(start)/2)
	return rec.ExpiresAt.Add(-margin)
}

// next is when to look at rec again after re-driving it now: after its
// backoff, and no later than its give-up time. The backoff spares a
// consumer that takes messages and fails. Nobody claimed a received
// record's last message; if the queue was idle too, that message was lost,
// not slow, and the record waits only the first step.
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

// awaitUntil is when the reclaimer stops waiting for rec's message: when
// the message must have left the queue, or the give-up time if earlier.
func (h *Handler) awaitUntil(rec ledger.Record) time.Time {
	until := rec.CreatedAt.Add(MessageLifetime)
	if cap := GiveUpAt(rec); !cap.IsZero() && cap.Before(until) {
		return cap
	}
	return until
}

// awaitMessage postpones a record whose body is stored nowhere the
// reclaimer can read while its message may still be on the queue (under
// HOOKLEDGER_PAYLOAD=on-trouble, or after a failed payload write, the body
// may live only there). Counting reclaims would bury an event its message
// may still complete, so until awaitUntil it is postponed without one, for
// its age (1 minute to 1 hour). Past that, it reports false.
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

// bodyless waits for a bodiless record's message (awaitMessage), then buries it.
func (h *Handler) bodyless(ctx context.Context, rec ledger.Record, now time.Time, rep *Report) {
	log := h.logger().With("source", rec.Source, "tenant", rec.Tenant, "event_id", rec.ID, "status", string(rec.Status), "trace_id", trace.ID(rec.Trace))
	waiting, err := h.awaitMessage(ctx, rec, now, log)
	switch {
	case err != nil:
		h.count(ctx, rec, err, rep)
	case waiting:
		rep.Postponed++
	default:
		h.buryBodiless(ctx, rec, rep)
	}
}

// buryBodiless marks dead a record whose body was never stored and whose
// message did not come back. The cause says the body may be in the DLQ,
// whose redrive (hookledger replay --dlq) lets the processor store it.
func (h *Handler) buryBodiless(ctx context.Context, rec ledger.Record, rep *Report) {
	cause := fmt.Sprintf("message and body not seen since it was received at %s (%d attempts, %d interrupted, %d reclaims, last status %s): the body was never stored in the ledger "+
		"and its message is gone from the queue. If the dead-letter queue holds the message, run hookledger replay --dlq DLQ_URL, then hookledger replay --source %s --tenant %s --id %s",
		rec.CreatedAt.UTC().Format(time.RFC3339), rec.Attempts, rec.Interrupted, rec.Reclaims, rec.Status, rec.Source, rec.Tenant, rec.ID)
	if rec.LastError != "" {
		cause += "; last error: " + rec.LastError
	}
	h.bury(ctx, rec, cause, rep, "reclaims", rec.Reclaims)
}

// giveUp marks dead a record at its give-up time, saying what kept it from being done.
func (h *Handler) giveUp(ctx context.Context, rec ledger.Record, until time.Time, rep *Report) {
	cause := fmt.Sprintf("gave up at %s, %s before the record expires: not done since %s %s, after %s (%s, %s) and %s. "+
		"Interrupted runs are crashes, timeouts, lost leases and AWS errors, not failures of the handler: fix what interrupts it "+
		"(the processor's errors and timeouts), then hookledger replay --source %s --tenant %s --id %s. Last status %s",
		until.UTC().Format(time.RFC3339), short(rec.ExpiresAt.Sub(until)), started(rec), rec.Since().UTC().Format(time.RFC3339),
		plural(rec.Attempts, "run"), plural(rec.Interrupted, "interrupted run"), plural(rec.Failures, "failure"), plural(rec.Reclaims, "reclaim"),
		rec.Source, rec.Tenant, rec.ID, rec.Status)
	if rec.LastError != "" {
		cause += ", last error: " + rec.LastError
	}
	h.bury(ctx, rec, cause, rep, "attempts", rec.Attempts, "interrupted", rec.Interrupted, "failures", rec.Failures, "reclaims", rec.Reclaims)
}

// bury marks rec dead with cause, alarmed; attrs go on the log line.
func (h *Handler) bury(ctx context.Context, rec ledger.Record, cause string, rep *Report, attrs ...any) {
	if _, err := h.Ledger.BuryStale(ctx, rec, cause); err != nil {
		h.count(ctx, rec, err, rep)
		return
	}
	rep.Buried++
	h.Metrics.Count("Dead", "NeedsOperator")
	attrs = append([]any{"source", rec.Source, "tenant", rec.Tenant, "event_id", rec.ID, "status", string(rec.Status), "trace_id", trace.ID(rec.Trace)}, attrs...)
	h.logger().ErrorContext(ctx, "event dead", append(attrs, "cause", cause)...)
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
