// Package receiver is the receiver Lambda's handler: it verifies a webhook
// delivery, claims its idempotency key in the ledger and enqueues it, and
// answers the sender as docs/design.md §4 says. It never performs side effects.
package receiver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
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
	"github.com/hookledger/hookledger/internal/trace"
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
	// Store is the S3 payload store (nil: none). It takes the bodies a
	// ledger item cannot hold, and those over StoreAbove when that is set;
	// without a store such bodies get 413.
	Store      objects
	StoreAbove int
	// RequeueAfter is how old a received record must be before a duplicate
	// enqueues it again (0: DefaultRequeueAfter). Younger, its receiver may
	// still be at work. Keep it above the receiver's timeout.
	RequeueAfter time.Duration
	Log          *slog.Logger
	Metrics      *metric.Emitter // nil: no metrics
	Now          func() time.Time
	Trace        *trace.Tracer // spans (nil: none)
}

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
	sp := h.Trace.Start(trace.Server, "POST", route, h.invocation(ctx))
	a, ev := h.handle(trace.With(ctx, sp), req, src, tenant, log)
	logAnswer(ctx, log, a, ev, time.Since(start))
	h.Metrics.Count(a.result.Metrics()...)
	h.endRequest(ctx, sp, a, ev, src, tenant)
	return respond(a), nil
}

func (h *Handler) logger() *slog.Logger { return fallback.Logger(h.Log) }

func (h *Handler) now() time.Time { return fallback.Now(h.Now) }

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
	if err != nil {
		return refused(ctx, err, secrets, refs, log), none
	}
	if len(secrets.Errors) > 0 {
		log.WarnContext(ctx, "some secret references did not resolve; verified with the others", "error", secrets.Err().Error())
	}
	// Every scheme's body is JSON or a form, both UTF-8. The JSON decoder
	// turns each invalid byte into U+FFFD, so two different ids could read
	// as one key, and the second event would be dropped as a duplicate.
	if !utf8.Valid(body) {
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"malformed body: not valid UTF-8"}`), none
	}
	if ev.Handshake != nil {
		return answer{status: ev.Handshake.Status, result: Handshake, body: string(ev.Handshake.Body), ctype: ev.Handshake.ContentType}, ev
	}
	inject.Crash(inject.ReceiverAfterVerify)
	a := h.claim(ctx, Delivery{Source: src, Tenant: tenant, Key: ev.ID, Type: ev.Type, Body: body,
		Digest: verifier.BodyDigest(body), ReplayGuard: h.Sources.ReplayGuard(src), Trace: h.eventContext(ctx)}, log)
	if !a.keyed {
		return a, none // a key or type the logs should not carry either
	}
	return a, ev
}

// Delivery is an authenticated event on its way into the ledger: from the
// receiver once a signature checked out, or from the bus door, whose put
// IAM authenticated.
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
	// Trace is the delivery's trace context, which a new event keeps.
	Trace trace.Context
}

// claim is the one claim path of both doors: the identity's checks, where
// the body goes, the conditional put, then the payload and the enqueue.
// Its lines, and its answer, carry the event's trace id: the delivery's,
// or a duplicate's record's.
func (h *Handler) claim(ctx context.Context, d Delivery, log *slog.Logger) (a answer) {
	tid, header := d.Trace.ID(), d.Trace.Header()
	defer func() { a.trace = tid }()
	base := log
	log = log.With("trace_id", tid)
	id, bad := checkIdentity(ctx, d, log)
	if bad != nil {
		return *bad
	}
	// Refuse what cannot be held before anything is written: a record whose
	// body can never be stored would end dead. A body the ledger's payload
	// item cannot hold goes to the payload store, if there is one.
	var ref string
	if err := ledger.CheckPayloadSize(id, d.Body); err != nil {
		if h.Store == nil {
			log.WarnContext(ctx, "body cannot be stored", "event_id", d.Key, "reason", err.Error())
			return keyed(ansTooLarge)
		}
		ref = h.Store.Key(id, d.Digest)
	} else if h.Store != nil && h.StoreAbove > 0 && len(d.Body) > h.StoreAbove {
		ref = h.Store.Key(id, d.Digest)
	}
	if d.ReplayGuard {
		if a, refused := h.replayGuard(ctx, id, d, log); refused {
			return keyed(a)
		}
	}
	cs := trace.SpanOf(ctx).Child(trace.Internal, "claim", "")
	rec, created, err := h.Ledger.Create(ctx, ledger.NewEvent{Key: id, Type: d.Type, BodySHA256: d.Digest, PayloadRef: ref, Trace: header})
	endClaim(cs, created, err)
	if err != nil {
		log.ErrorContext(ctx, "ledger create failed", "event_id", d.Key, "error", err.Error())
		return keyed(ansUnavailable)
	}
	inject.Crash(inject.ReceiverAfterRecord)
	msg := queue.Message{Source: d.Source, Tenant: d.Tenant, ID: d.Key, Type: d.Type, SHA256: d.Digest, Body: d.Body, ReceivedAt: h.now().UnixMilli(), Ref: ref,
		Trace: header}
	if !created {
		if rid := trace.ID(rec.Trace); rid != "" && rid != tid {
			tid, log = rid, base.With("trace_id", rid)
		}
		return keyed(h.duplicate(ctx, rec, msg, log))
	}
	if err := h.accept(ctx, msg); err != nil {
		log.ErrorContext(ctx, "store after create failed", "event_id", d.Key, "error", err.Error())
		return keyed(ansUnavailable)
	}
	inject.Crash(inject.ReceiverAfterEnqueue)
	return keyed(ansAccepted)
}

// accept stores and enqueues a new event: the one round trip after the
// record, so the sender waits for two. PayloadAlways (and any body in the
// payload store) writes the body while the message is sent; PayloadOnTrouble
// sends only the message, and writes the body if the send fails, so that the
// reclaimer can re-drive the event.
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

// keepAndSend writes the body and enqueues at once, and returns both
// failures. Neither waits on the other. The reclaimer re-drives a body
// stored without a message. A message without a stored body gets one from
// the processor's keep if its event runs into trouble, or from the
// sender's retry of the 503.
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
// message has a reference, else the ledger's payload item under the
// record's digest (callers send only a body whose digest is the record's).
// Both writes are idempotent: the same bytes under the event's own key.
func (h *Handler) keep(ctx context.Context, msg queue.Message) error {
	if msg.Ref != "" {
		if h.Store == nil {
			return fmt.Errorf("%s: body kept in the payload store (%s), but no store is configured", msg.Key(), msg.Ref)
		}
		return h.Store.Put(ctx, msg.Ref, msg.Body)
	}
	return h.Ledger.PutPayload(ctx, msg.Key(), msg.Body, msg.SHA256)
}
