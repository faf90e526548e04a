package reclaimer

import (
	"context"
	"errors"
	"time"

	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// decide postpones a record under a live lease, and reports whether it goes on to redrive.
func (h *Handler) decide(ctx context.Context, rec ledger.Record, now time.Time, rep *Report) (bool, error) {
	if rec.LeaseLive(now) {
		if _, err := h.Ledger.Postpone(ctx, rec, rec.LeaseUntil.Add(fallback.Positive(h.LeaseGrace, DefaultLeaseGrace))); err != nil {
			return false, err
		}
		rep.Postponed++
		return false, nil
	}
	return true, nil
}

// count books a failed transition. A conflict (another reclaimer or a
// worker acted first) is fine. Either way the record is held for the next
// run: a worker's claim leaves its due time, and the worker may die.
func (h *Handler) count(ctx context.Context, rec ledger.Record, err error, rep *Report) {
	rep.hold(rec.Key)
	if errors.Is(err, ledger.ErrConflict) {
		rep.Conflicts++
		return
	}
	rep.Errors++
	h.logger().WarnContext(ctx, "reclaim failed", "source", rec.Source, "tenant", rec.Tenant, "event_id", rec.ID,
		"status", string(rec.Status), "error", err.Error(), "trace_id", trace.ID(rec.Trace))
}

// redrive re-enqueues records. It reads their bodies in one go, takes each
// with a conditional write (so only one reclaimer sends it), then sends the
// messages in batches. A record past its give-up time, or without a body,
// is buried instead. idle: the queue was idle at the run's start.
func (h *Handler) redrive(ctx context.Context, recs []ledger.Record, now time.Time, idle bool, rep *Report) {
	var inLedger []ledger.Record // the rest have their body in the payload store
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
		body, ok := bodies[rec.Key]
		if rec.PayloadRef != "" {
			b, err := blob.Body(ctx, h.Ledger, h.Store, rec)
			switch {
			case errors.Is(err, blob.ErrMissing):
			case err != nil:
				rep.Errors++ // unknown: look again next run
				rep.hold(rec.Key)
				h.logger().WarnContext(ctx, "reclaim: payload store read failed", "source", rec.Source, "tenant", rec.Tenant, "event_id", rec.ID, "error", err.Error(),
					"trace_id", trace.ID(rec.Trace))
				continue
			default:
				body, ok = b, true
			}
		} else if !ok && readErr != nil {
			rep.Errors++ // unknown: look again next run
			rep.hold(rec.Key)
			continue
		}
		if !ok {
			h.bodyless(ctx, rec, now, rep)
			continue
		}
		if until := GiveUpAt(rec); !until.IsZero() && !now.Before(until) {
			h.giveUp(ctx, rec, until, rep)
			continue
		}
		took, err := h.take(ctx, rec, h.next(rec, now, idle))
		if err != nil {
			h.count(ctx, rec, err, rep)
			continue
		}
		msgs = append(msgs, queue.Message{
			Source: rec.Source, Tenant: rec.Tenant, ID: rec.ID, Type: rec.EventType, SHA256: rec.BodySHA256, Body: body,
			ReceivedAt: rec.CreatedAt.UnixMilli(), Ref: rec.PayloadRef, Trace: rec.Trace,
		})
		taken = append(taken, took)
		reset = append(reset, rec.Status == ledger.Processing)
	}
	if len(msgs) > 0 {
		h.send(ctx, msgs, taken, reset, now, idle, rep)
	}
}

// take makes rec this reclaimer's to send: Reset for an expired lease, else Requeue.
func (h *Handler) take(ctx context.Context, rec ledger.Record, next time.Time) (ledger.Record, error) {
	if rec.Status != ledger.Processing {
		return h.Ledger.Requeue(ctx, rec, next)
	}
	took, err := h.Ledger.Reset(ctx, rec, next)
	if err == nil {
		inject.Crash(inject.ReclaimerAfterReset)
	}
	return took, err
}

// send sends the messages of the records redrive took (reset[i]: it was
// processing) and books SQS's answers. An entry SQS failed is taken back
// (Unsent), due again soon; one whose fate is unknown stays counted, due
// after its backoff, as if the run had died before sending.
func (h *Handler) send(ctx context.Context, msgs []queue.Message, taken []ledger.Record, reset []bool, now time.Time, idle bool, rep *Report) {
	sent, retry := 0, fallback.Positive(h.RetryAfter, DefaultRetryAfter)
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
				"source", rec.Source, "tenant", rec.Tenant, "event_id", rec.ID, "reclaims", rec.Reclaims, "gives_up_at", GiveUpAt(rec), "error", err.Error(),
				"trace_id", trace.ID(rec.Trace))
		default:
			rep.Errors++
			h.logger().WarnContext(ctx, "re-drive send failed; due again after its backoff", "source", rec.Source, "tenant", rec.Tenant,
				"event_id", rec.ID, "reclaims", rec.Reclaims, "error", err.Error(), "trace_id", trace.ID(rec.Trace))
		}
	}
	h.Metrics.Add(map[string]int{"Reclaimed": sent})
}
