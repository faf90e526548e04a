// Package receiver is the receiver Lambda's handler: it verifies a webhook
// delivery, claims its idempotency key in the ledger and enqueues it, and
// answers the sender as docs/design.md §4 says. It never performs side effects.
package receiver

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// recorder is the slice of the ledger the receiver writes.
type recorder interface {
	Create(ctx context.Context, ev ledger.NewEvent) (ledger.Record, bool, error)
	PutPayload(ctx context.Context, id ledger.Key, body []byte, digest string) error
	ClaimBody(ctx context.Context, id ledger.Key, ev ledger.Identity) (string, error)
}

// sender enqueues an event for the processor.
type sender interface {
	Send(ctx context.Context, m queue.Message) error
}

// objects writes bodies to the S3 payload store.
type objects interface {
	Key(id ledger.Key, digest string) string
	Put(ctx context.Context, key string, body []byte) error
}

// sources resolves a (source, tenant) to its verifier and secrets.
type sources interface {
	Verifier(source, tenant string) (*webhook.Verifier, []source.Ref, error)
	Secrets(ctx context.Context, refs []source.Ref) source.Resolved
	ReplayGuard(source string) bool
}

var (
	_ recorder = (*ledger.Ledger)(nil)
	_ sender   = (*queue.Sender)(nil)
	_ sources  = (*source.Registry)(nil)
	_ objects  = (*blob.Store)(nil)
)

// Mismatch policies: what to do when a key arrives again with a different
// body digest.
const (
	MismatchFlag   = "flag"   // answer duplicate, log and count it (default)
	MismatchReject = "reject" // answer 409
)

// Defaults for Handler's zero fields.
const (
	DefaultMaxBody      = 256 * 1024 // 256 KiB
	DefaultRequeueAfter = 30 * time.Second
)

// Handler is the receiver. Its fields are its dependencies.
type Handler struct {
	Sources  sources
	Ledger   recorder
	Queue    sender
	MaxBody  int    // bytes; 0 means DefaultMaxBody
	Mismatch string // MismatchFlag or MismatchReject
	// Payload is when a new event's body is stored: config.PayloadAlways
	// or config.PayloadOnTrouble ("": config.DefaultPayload).
	Payload string
	// Store is the S3 payload store (nil: none). Bodies a ledger item
	// cannot hold, and bodies over StoreAbove bytes when it is set, are
	// written there before the answer; without a store they get 413.
	Store      objects
	StoreAbove int
	// RequeueAfter is how old a duplicate's received record must be before
	// the receiver stores and enqueues it again (0 means
	// DefaultRequeueAfter). Younger, the receiver that created it may still
	// be at work; older, it has surely died or finished. Keep it above the
	// receiver's timeout.
	RequeueAfter time.Duration
	Log          *slog.Logger
	Metrics      *metric.Emitter // nil: no metrics
	Now          func() time.Time
}

// Result names the outcome of one request, for logs and metrics.
type Result string

// The receiver's outcomes.
const (
	Accepted     Result = "accepted"
	Duplicate    Result = "duplicate"
	Requeued     Result = "duplicate_requeued"
	Mismatched   Result = "duplicate_body_mismatch"
	Handshake    Result = "handshake"
	Unauthorized Result = "rejected_signature"
	NotFound     Result = "rejected_unknown"
	TooLarge     Result = "rejected_too_large"
	BadRequest   Result = "rejected_malformed"
	NotAllowed   Result = "rejected_method"
	Conflict     Result = "rejected_conflict"
	Replayed     Result = "rejected_replay"
	Unavailable  Result = "unavailable"
	// NoSecret is a 503 because no signing secret of the tenant could be
	// read or used (deleted, denied, throttled, a key/value JSON secret):
	// a server-side cause, never a 401, which senders treat as final.
	NoSecret Result = "unavailable_secret"
)

type answer struct {
	status int
	result Result
	body   string
	ctype  string
	keyed  bool // the event's key and type are fit for the log line
}

// keyed marks an answer given once the key and type passed the checks.
func keyed(a answer) answer {
	a.keyed = true
	return a
}

func jsonAnswer(status int, result Result, body string) answer {
	return answer{status: status, result: result, body: body, ctype: "application/json"}
}

var (
	ansAccepted     = jsonAnswer(http.StatusOK, Accepted, `{"status":"accepted"}`)
	ansDuplicate    = jsonAnswer(http.StatusOK, Duplicate, `{"status":"duplicate"}`)
	ansUnavailable  = jsonAnswer(http.StatusServiceUnavailable, Unavailable, `{"error":"temporarily unavailable, retry later"}`)
	ansUnauthorized = jsonAnswer(http.StatusUnauthorized, Unauthorized, `{"error":"invalid signature"}`)
	ansNoSecret     = jsonAnswer(http.StatusServiceUnavailable, NoSecret, `{"error":"temporarily unavailable, retry later"}`)
)

// Handle answers one API Gateway HTTP API (payload v2) request. It never
// returns an error: every failure is an HTTP answer, and a panic becomes a
// 500 with no internal text.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, _ error) {
	start := time.Now()
	src, tenant := pathParts(req)
	log := h.logger().With("source", src, "tenant", tenant)
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "receiver panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp = respond(jsonAnswer(http.StatusInternalServerError, Unavailable, `{"error":"internal error"}`))
		}
	}()
	a, ev := h.handle(ctx, req, src, tenant, log)
	// A line per delivery is billed by the byte: the status only where the
	// result does not imply 200, the type only where no earlier line of the
	// event has it (a duplicate's: the processor's line has).
	attrs := []any{"result", string(a.result)}
	if a.status != http.StatusOK {
		attrs = append(attrs, "http_status", a.status)
	}
	attrs = append(attrs, "duration_ms", time.Since(start).Milliseconds())
	if ev.ID != "" {
		attrs = append(attrs, "event_id", ev.ID)
		if a.result != Duplicate && a.result != Requeued {
			attrs = append(attrs, "event_type", ev.Type)
		}
	}
	level := slog.LevelInfo
	if a.result == Accepted {
		// The processor's line says what became of the event, and the
		// record that it came: one info line per event, not two.
		level = slog.LevelDebug
	}
	if a.status >= 500 {
		level = slog.LevelError
	} else if a.status >= 400 || a.result == Mismatched {
		level = slog.LevelWarn
	}
	log.Log(ctx, level, "webhook", attrs...)
	h.Metrics.Count(a.result.Metrics()...)
	return respond(a), nil
}

// Metrics names the counts an outcome adds to. The happy path (accepted,
// duplicate) adds to none: a custom metric costs $0.30 a month for as long
// as it receives data, and the AWS metrics of the function and the queue
// count deliveries and new events already (docs/deploy.md). What needs a
// person also counts NeedsOperator, the one metric its alarm watches.
func (r Result) Metrics() []string {
	switch r {
	case Accepted, Duplicate, Requeued:
		return nil
	case Mismatched:
		return []string{"BodyMismatch", "NeedsOperator"}
	case Handshake:
		return []string{"Handshake"}
	case Unavailable:
		return []string{"Unavailable"}
	case NoSecret:
		return []string{"Unavailable", "SecretUnavailable", "NeedsOperator"}
	case Replayed:
		return []string{"Rejected", "Replay"}
	default:
		return []string{"Rejected"}
	}
}

// refList is a tenant's references for a log line (literal values masked).
func refList(refs []source.Ref) string {
	s := make([]string, len(refs))
	for i, r := range refs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

func respond(a answer) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: a.status,
		Headers:    map[string]string{"Content-Type": a.ctype, "X-Hookledger-Result": string(a.result)},
		Body:       a.body,
	}
}

func (h *Handler) logger() *slog.Logger { return fallback.Logger(h.Log) }

func (h *Handler) now() time.Time { return fallback.Now(h.Now) }

// pathParts takes source and tenant from the route's path parameters, or
// from a raw path of the form /webhooks/{source}/{tenant}.
func pathParts(req events.APIGatewayV2HTTPRequest) (string, string) {
	if s, t := req.PathParameters["source"], req.PathParameters["tenant"]; s != "" || t != "" {
		return s, t
	}
	parts := strings.Split(strings.Trim(req.RawPath, "/"), "/")
	if len(parts) == 3 && parts[0] == "webhooks" {
		return parts[1], parts[2]
	}
	return "", ""
}

func (h *Handler) handle(ctx context.Context, req events.APIGatewayV2HTTPRequest, src, tenant string, log *slog.Logger) (answer, webhook.Event) {
	var none webhook.Event
	if m := req.RequestContext.HTTP.Method; m != "" && m != http.MethodPost {
		return jsonAnswer(http.StatusMethodNotAllowed, NotAllowed, `{"error":"method not allowed, use POST"}`), none
	}
	if !ledger.ValidName(src) || !ledger.ValidName(tenant) {
		return jsonAnswer(http.StatusNotFound, NotFound, `{"error":"unknown source or tenant"}`), none
	}
	verifier, refs, err := h.Sources.Verifier(src, tenant)
	if err != nil {
		return jsonAnswer(http.StatusNotFound, NotFound, `{"error":"unknown source or tenant"}`), none
	}
	body, bad := h.decodeBody(req)
	if bad != nil {
		return *bad, none
	}
	secrets := h.Sources.Secrets(ctx, refs)
	if len(secrets.Values) == 0 {
		secrets.LogFailures(ctx, log, slog.LevelError)
		log.ErrorContext(ctx, "no signing secret of the tenant could be read", "error", secrets.Err().Error())
		return ansNoSecret, none
	}
	ev, err := verifier.Verify(&webhook.Request{
		Method: http.MethodPost, URL: requestURL(req), Header: headers(req.Headers), Body: body,
	}, secrets.Values, h.now())
	switch rh, repeated := errors.AsType[*webhook.RepeatedHeaderError](err); {
	case repeated:
		// Checked first: a repeated id or type header after a valid
		// signature also wraps ErrNoKey.
		return repeatedHeader(rh.Header), none
	case errors.Is(err, webhook.ErrMalformedBody):
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"malformed body"}`), none
	case errors.Is(err, webhook.ErrNoKey):
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"no idempotency key in the delivery"}`), none
	case errors.Is(err, webhook.ErrNoSecret):
		// The secrets were read but none can be a key of this scheme (a
		// Standard Webhooks secret without whsec_, say): configuration.
		log.ErrorContext(ctx, "no usable signing secret for the provider", "reason", err.Error(),
			"secret_ref", refList(refs), "secret_problem", "not usable for this provider",
			"secret_fix", "store each of these secrets in the form the provider's dashboard shows it (docs/providers.md)")
		return ansNoSecret, none
	case errors.Is(err, webhook.ErrBadSignature) && !secrets.Only(source.ErrSecretGone):
		// A secret that could not be read (throttled, denied, unusable) may
		// be the one the sender signed with: let the sender retry. A forgery
		// lands here too, and raises the alarm: it cannot make a secret
		// unreadable, only show that one is (docs/deploy.md, "A secret that
		// cannot be read").
		secrets.LogFailures(ctx, log, slog.LevelError)
		log.ErrorContext(ctx, "signature matched none of the readable secrets while others could not be read",
			"error", secrets.Err().Error())
		return ansNoSecret, none
	case err != nil:
		log.WarnContext(ctx, "verification failed", "reason", err.Error())
		return ansUnauthorized, none
	}
	if len(secrets.Errors) > 0 {
		log.WarnContext(ctx, "some secret references did not resolve; verified with the others", "error", secrets.Err().Error())
	}
	// Every scheme's body is JSON or a URL-encoded form, both UTF-8 by
	// definition. A key read from invalid UTF-8 is lossy (the JSON decoder
	// turns each bad byte into U+FFFD), so two different event ids could
	// claim one ledger key and the second would be dropped as a duplicate.
	if !utf8.Valid(body) {
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"malformed body: not valid UTF-8"}`), none
	}
	if ev.Handshake != nil {
		return answer{status: ev.Handshake.Status, result: Handshake, body: string(ev.Handshake.Body), ctype: ev.Handshake.ContentType}, ev
	}
	inject.Crash(inject.ReceiverAfterVerify)
	a := h.claim(ctx, Delivery{Source: src, Tenant: tenant, Key: ev.ID, Type: ev.Type, Body: body,
		Digest: verifier.BodyDigest(body), ReplayGuard: h.Sources.ReplayGuard(src)}, log)
	if !a.keyed {
		return a, none // a key or type the logs should not carry either
	}
	return a, ev
}

// Delivery is an authenticated event on its way into the ledger: what the
// receiver holds once a signature checked out, and what the bus door holds
// once EventBridge handed it an event (IAM authenticated the put).
type Delivery struct {
	Source, Tenant string
	Key, Type      string
	Body           []byte
	// Digest is the body's digest as the record keeps it: the verifier's
	// BodyDigest over HTTP, BusDigest on the bus.
	Digest string
	// ReplayGuard refuses a body already accepted under another key
	// (Source.ReplayGuard).
	ReplayGuard bool
}

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

// Claim records and enqueues an authenticated delivery, exactly as the
// receiver does after a valid signature: the one claim path of both doors
// (keys and types the pipeline cannot carry refused, the body held or
// refused, the replay guard, the conditional put, the duplicate rules, the
// payload and the enqueue). It returns the outcome and, for a refusal, why
// (the receiver's answer body); it counts no Received metrics (the caller
// does, per door).
func (h *Handler) Claim(ctx context.Context, d Delivery, log *slog.Logger) (Result, string) {
	a := h.claim(ctx, d, log)
	return a.result, a.body
}

func (h *Handler) claim(ctx context.Context, d Delivery, log *slog.Logger) answer {
	src, tenant, body, digest := d.Source, d.Tenant, d.Body, d.Digest
	ev := webhook.Event{ID: d.Key, Type: d.Type}
	// The identity's door (ledger.NewID): every rule, once. Its characters
	// are answered before the type's, its sizes after.
	id, idErr := ledger.NewKey(src, tenant, ev.ID)
	if errors.Is(idErr, ledger.ErrText) {
		log.WarnContext(ctx, "unusable idempotency key", "reason", idErr.Error())
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"idempotency key has characters the pipeline cannot carry"}`)
	}
	if err := ledger.CheckType(ev.Type); errors.Is(err, ledger.ErrText) {
		log.WarnContext(ctx, "unusable event type", "reason", err.Error())
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"event type has characters the pipeline cannot carry"}`)
	} else if err != nil {
		log.WarnContext(ctx, "event type too long", "bytes", len(ev.Type), "limit", ledger.MaxType)
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"event type too long"}`)
	}
	if idErr != nil {
		return keyed(jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"idempotency key too long"}`))
	}
	// Refuse what cannot be held before anything is written: a record whose
	// body can never be stored would end dead. A body the ledger's payload
	// item cannot hold goes to the payload store, if there is one.
	var ref string
	if err := ledger.CheckPayloadSize(id, body); err != nil {
		if h.Store == nil {
			log.WarnContext(ctx, "body cannot be stored", "event_id", ev.ID, "reason", err.Error())
			return keyed(ansTooLarge)
		}
		ref = h.Store.Key(id, digest)
	} else if h.Store != nil && h.StoreAbove > 0 && len(body) > h.StoreAbove {
		ref = h.Store.Key(id, digest)
	}
	if d.ReplayGuard {
		// Scoped by event type: two real events of different types may
		// carry the same body (ledger.ClaimBody).
		first, err := h.Ledger.ClaimBody(ctx, id, ledger.Identity{Type: ev.Type, BodySHA256: digest})
		if err != nil {
			log.ErrorContext(ctx, "replay guard unavailable", "event_id", ev.ID, "error", err.Error())
			return keyed(ansUnavailable)
		}
		if first != ev.ID {
			log.WarnContext(ctx, "body already accepted under another event id: replay refused",
				"event_id", ev.ID, "first_event_id", first, "event_type", ev.Type, "body_sha256", digest)
			return keyed(jsonAnswer(http.StatusConflict, Replayed, `{"error":"this body was already delivered with this type under another event id"}`))
		}
	}
	rec, created, err := h.Ledger.Create(ctx, ledger.NewEvent{Key: id, Type: ev.Type, BodySHA256: digest, PayloadRef: ref})
	if err != nil {
		log.ErrorContext(ctx, "ledger create failed", "event_id", ev.ID, "error", err.Error())
		return keyed(ansUnavailable)
	}
	inject.Crash(inject.ReceiverAfterRecord)
	msg := queue.Message{Source: src, Tenant: tenant, ID: ev.ID, Type: ev.Type, SHA256: digest, Body: body, ReceivedAt: h.now().UnixMilli(), Ref: ref}
	if !created {
		return keyed(h.duplicate(ctx, rec, msg, log))
	}
	if err := h.accept(ctx, msg); err != nil {
		log.ErrorContext(ctx, "store after create failed", "event_id", ev.ID, "error", err.Error())
		return keyed(ansUnavailable)
	}
	inject.Crash(inject.ReceiverAfterEnqueue)
	return keyed(ansAccepted)
}

// accept stores and enqueues a new event: the one round trip after the
// record. With config.PayloadAlways (and for every body kept in the
// payload store) the body is written while the message is sent; with
// config.PayloadOnTrouble only the message is sent, and the body is written
// only if the send fails, so that the reclaimer can re-drive the event.
// Either way the sender waits for two sequential round trips.
func (h *Handler) accept(ctx context.Context, msg queue.Message) error {
	if cmp.Or(h.Payload, config.DefaultPayload) == config.PayloadOnTrouble && msg.Ref == "" {
		err := h.Queue.Send(ctx, msg)
		if err == nil {
			return nil
		}
		if perr := h.keep(ctx, msg); perr != nil {
			return errors.Join(err, perr)
		}
		return err
	}
	return h.keepAndSend(ctx, msg)
}

// keepAndSend writes the body and enqueues at the same time and returns
// both failures. Each goes ahead whatever the other does: a body stored
// without a message is re-driven by the reclaimer, and a message sent
// without a stored body gets one from the processor if its event runs into
// trouble (see the processor's keep) or from the sender's retry of the 503.
func (h *Handler) keepAndSend(ctx context.Context, msg queue.Message) error {
	var wg sync.WaitGroup
	var perr error
	wg.Go(func() {
		if perr = h.keep(ctx, msg); perr == nil {
			inject.Crash(inject.ReceiverAfterPayload)
		}
	})
	serr := h.Queue.Send(ctx, msg)
	wg.Wait()
	return errors.Join(perr, serr)
}

// keep stores the body where the record says: the payload store when the
// message carries a reference, the ledger's payload item otherwise, marked
// with the record's digest (msg.SHA256: the callers send only a body whose
// digest is the record's). Both writes are idempotent (the same bytes under
// the event's own key).
func (h *Handler) keep(ctx context.Context, msg queue.Message) error {
	if msg.Ref != "" {
		if h.Store == nil {
			return fmt.Errorf("%s: body kept in the payload store (%s), but no store is configured", msg.Key(), msg.Ref)
		}
		return h.Store.Put(ctx, msg.Ref, msg.Body)
	}
	return h.Ledger.PutPayload(ctx, msg.Key(), msg.Body, msg.SHA256)
}

// duplicate answers a key that is already in the ledger.
func (h *Handler) duplicate(ctx context.Context, rec ledger.Record, msg queue.Message, log *slog.Logger) answer {
	// The record decides where its body lives, not this delivery's size.
	msg.Ref = rec.PayloadRef
	if rec.BodySHA256 != "" && !sameDoor(rec.BodySHA256, msg.SHA256) {
		// The same id through the other door: a tenant with both doors
		// takes bus events from Stripe's partner event source only
		// (source.StripePartnerSource), so Stripe wrote both. The bytes
		// differ by nature and the digests say nothing; the type must
		// match. Nothing of this delivery is written: the record keeps the
		// first door's body, and its door re-drives it.
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
		// Nothing of this body is written, even under a record that has no
		// payload yet (as every record does while its first message is on
		// the queue under on-trouble). For many providers the id is not
		// covered by the signature (docs/providers.md), so a captured,
		// genuinely signed body sent again under a pending event's id would
		// otherwise become that event's payload, and every recovery path
		// would run the effects on it. A conforming sender's retry has the
		// same digest: the provider's volatile fields are left out of it.
		log.WarnContext(ctx, "idempotency key reused with a different body; nothing stored",
			"event_id", msg.ID, "status", string(rec.Status), "stored_sha256", rec.BodySHA256, "body_sha256", msg.SHA256)
		return h.mismatch()
	}
	// The same body (or a record from before digests were kept). The
	// record is the event's identity: whatever is stored or enqueued from
	// here on carries its type and digest, not this delivery's. A type
	// header the signature does not cover (GitHub's X-GitHub-Event,
	// Shopify's topic) may differ on a forged or buggy duplicate; the
	// message would otherwise be parked by the processor, or, before the
	// processor checked, run under the wrong route.
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
			// The first receiver writes the stored object beside the
			// enqueue; if it died after the send and before the write, the
			// message carries only the reference and nothing else holds
			// the body. This delivery is the same body (the digest
			// matched), so write it before answering 2xx.
			if err := h.keep(ctx, msg); err != nil {
				log.ErrorContext(ctx, "payload store for duplicate failed", "event_id", msg.ID, "status", string(rec.Status), "error", err.Error())
				return ansUnavailable
			}
		}
		return ansDuplicate
	}
	// Still received: the receiver that created the record may have died
	// before storing the payload, and once this delivery is answered 2xx the
	// sender will not retry again. Store the payload (the same bytes: the
	// digest matched) before answering, so the reclaimer can always re-drive
	// the event, whatever the payload policy. Enqueue again only when the
	// record is older than the grace period: younger, the first receiver is
	// most likely still at work, and a burst of concurrent duplicates must
	// not flood the queue.
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

var (
	ansTooLarge  = jsonAnswer(http.StatusRequestEntityTooLarge, TooLarge, `{"error":"body too large"}`)
	ansBadBase64 = jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"body is not valid base64"}`)
)

// decodeBody returns the raw body bytes, or the answer for a body over the
// limit or with invalid base64. The limit is checked before decoding.
func (h *Handler) decodeBody(req events.APIGatewayV2HTTPRequest) ([]byte, *answer) {
	limit := h.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if !req.IsBase64Encoded {
		if len(req.Body) > limit {
			return nil, &ansTooLarge
		}
		return []byte(req.Body), nil
	}
	if base64.StdEncoding.DecodedLen(len(req.Body)) > limit+3 {
		return nil, &ansTooLarge
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, &ansBadBase64
	}
	if len(b) > limit {
		return nil, &ansTooLarge
	}
	return b, nil
}

// repeatedHeader answers a delivery that carries a header the verifier
// reads once (signature, timestamp, id, type) more than once.
func repeatedHeader(name string) answer {
	// The name is the verifier's own (or a configured one, an HTTP token),
	// never sender text; Marshal keeps the body JSON whatever it is.
	body, _ := json.Marshal(map[string]string{"error": "repeated header " + name})
	return jsonAnswer(http.StatusBadRequest, BadRequest, string(body))
}

// headers turns API Gateway's lower-cased header map into an http.Header.
// API Gateway (and hookledger dev) join repeated headers with commas; the
// verifier tells that form from one header's value by the header's format
// and refuses it.
func headers(in map[string]string) http.Header {
	h := make(http.Header, len(in))
	for k, v := range in {
		// Add, not Set: should the map ever hold one header under two
		// spellings (both front doors lowercase names, so they do not),
		// the verifier sees two values and refuses the ambiguity, rather
		// than one picked by map order.
		h.Add(k, v)
	}
	return h
}

// requestURL rebuilds the URL the sender posted to, for schemes that sign it.
func requestURL(req events.APIGatewayV2HTTPRequest) string {
	host := req.RequestContext.DomainName
	if host == "" {
		host = req.Headers["host"]
	}
	proto := req.Headers["x-forwarded-proto"]
	if proto == "" {
		proto = "https"
	}
	u := proto + "://" + host + req.RawPath
	if req.RawQueryString != "" {
		u += "?" + req.RawQueryString
	}
	return u
}
