package receiver

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// replayGuard refuses a body already accepted under another event id
// (Delivery.ReplayGuard). It is scoped by event type: two real events of
// different types may carry the same body (ledger.ClaimBody).
func (h *Handler) replayGuard(ctx context.Context, id ledger.Key, d Delivery, log *slog.Logger) (answer, bool) {
	first, err := h.Ledger.ClaimBody(ctx, id, ledger.Identity{Type: d.Type, BodySHA256: d.Digest})
	if err != nil {
		log.ErrorContext(ctx, "replay guard unavailable", "event_id", d.Key, "error", err.Error())
		return ansUnavailable, true
	}
	if first != d.Key {
		log.WarnContext(ctx, "body already accepted under another event id: replay refused",
			"event_id", d.Key, "first_event_id", first, "event_type", d.Type, "body_sha256", d.Digest)
		return jsonAnswer(http.StatusConflict, Replayed, `{"error":"this body was already delivered with this type under another event id"}`), true
	}
	return answer{}, false
}

// duplicate answers a key that is already in the ledger.
func (h *Handler) duplicate(ctx context.Context, rec ledger.Record, msg queue.Message, log *slog.Logger) answer {
	// The record decides where its body lives, not this delivery's size,
	// and a re-enqueue carries its trace.
	msg.Ref = rec.PayloadRef
	if rec.Trace != "" {
		msg.Trace = rec.Trace
	}
	if rec.BodySHA256 != "" && !sameDoor(rec.BodySHA256, msg.SHA256) {
		// The same id through the other door: a tenant with both doors takes
		// bus events from Stripe's partner source only, so Stripe wrote both
		// (source.StripePartnerSource). The bytes differ by nature, so the
		// type must match. Nothing of this delivery is written: the record
		// keeps the first door's body, and that door re-drives it.
		if msg.Type != rec.EventType {
			log.WarnContext(ctx, "event id already recorded from the other door with another type; nothing stored",
				"event_id", msg.ID, "status", string(rec.Status), "event_type", msg.Type, "stored_type", rec.EventType)
			return h.mismatch()
		}
		log.InfoContext(ctx, "event already recorded from the other door; duplicate",
			"event_id", msg.ID, "status", string(rec.Status))
		return ansDuplicate
	}
	if rec.BodySHA256 != "" && rec.BodySHA256 != msg.SHA256 {
		// Nothing of this body is written, even under a record without a
		// payload yet (any record under on-trouble while its message is
		// queued). Many providers' signatures do not cover the id
		// (docs/providers.md): a captured, signed body sent under a pending
		// event's id would become its payload. A conforming retry has the
		// same digest, as the provider's volatile fields are left out.
		log.WarnContext(ctx, "idempotency key reused with a different body; nothing stored",
			"event_id", msg.ID, "status", string(rec.Status), "stored_sha256", rec.BodySHA256, "body_sha256", msg.SHA256)
		return h.mismatch()
	}
	// The same body (or a record from before digests). The record is the
	// event's identity: what is stored or enqueued from here carries its
	// type and digest. A type header the signature does not cover (GitHub's
	// X-GitHub-Event, Shopify's topic) may differ on a forged or buggy
	// duplicate; its message would otherwise be parked or misrouted.
	if msg.Type != rec.EventType {
		log.WarnContext(ctx, "duplicate carries another event type than its record; the record's is kept",
			"event_id", msg.ID, "status", string(rec.Status), "event_type", msg.Type, "stored_type", rec.EventType)
		h.Metrics.Count("TypeMismatch")
	}
	msg.Type, msg.SHA256 = rec.EventType, rec.BodySHA256
	grace := h.RequeueAfter
	if grace <= 0 {
		grace = DefaultRequeueAfter
	}
	if rec.Status != ledger.Received {
		if rec.PayloadRef != "" && rec.Status != ledger.Done {
			// The first receiver writes the object beside the enqueue. If it
			// died in between, the message carries only the reference and
			// nothing holds the body. This delivery has the same digest:
			// write it before answering 2xx.
			if err := h.keep(ctx, msg); err != nil {
				log.ErrorContext(ctx, "payload store for duplicate failed", "event_id", msg.ID, "status", string(rec.Status), "error", err.Error())
				return ansUnavailable
			}
		}
		return ansDuplicate
	}
	// Still received: its receiver may have died before storing the
	// payload, and after this 2xx the sender will not retry. Store the
	// payload (the digest matched) so the reclaimer can always re-drive the
	// event. Enqueue again only past the grace period: younger, the first
	// receiver is most likely still at work, and a burst of concurrent
	// duplicates must not flood the queue.
	if h.now().Sub(rec.CreatedAt) < grace {
		if err := h.keep(ctx, msg); err != nil {
			log.ErrorContext(ctx, "payload store for received duplicate failed", "event_id", msg.ID, "error", err.Error())
			return ansUnavailable
		}
		return ansDuplicate
	}
	if err := h.keepAndSend(ctx, msg); err != nil {
		log.ErrorContext(ctx, "re-enqueue of received duplicate failed", "event_id", msg.ID, "error", err.Error())
		return ansUnavailable
	}
	a := ansDuplicate
	a.result = Requeued
	return a
}

// mismatch answers a key that holds another event: a duplicate counted
// and alarmed (MismatchFlag), or 409 (MismatchReject).
func (h *Handler) mismatch() answer {
	if h.Mismatch == MismatchReject {
		return jsonAnswer(http.StatusConflict, Conflict, `{"error":"idempotency key reused with a different body"}`)
	}
	a := ansDuplicate
	a.result = Mismatched
	return a
}
