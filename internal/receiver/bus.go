package receiver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
)

// BusDigestPrefix starts the digest of a body that came from the bus door
// (BusDigest). The two doors deliver one event as different bytes (Stripe's
// webhook body and its EventBridge detail), so digests compare only within
// a door; across doors the record's type must match (Handler.duplicate).
const BusDigestPrefix = "bus:"

// BusDigest is the digest the ledger keeps of a body taken from the bus.
func BusDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return BusDigestPrefix + hex.EncodeToString(sum[:])
}

// sameDoor reports whether two digests come from the same door.
func sameDoor(a, b string) bool {
	return strings.HasPrefix(a, BusDigestPrefix) == strings.HasPrefix(b, BusDigestPrefix)
}

// Claim records and enqueues an authenticated delivery by the receiver's
// own claim path, the one of both doors. It returns the outcome, for a
// refusal the answer body, and the event's trace id (a duplicate's is its
// record's). It counts no result metrics: the caller does, per door.
func (h *Handler) Claim(ctx context.Context, d Delivery, log *slog.Logger) (r Result, body, traceID string) {
	a := h.claim(ctx, d, log)
	return a.result, a.body, a.trace
}
