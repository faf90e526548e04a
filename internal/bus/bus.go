// Package bus is the bus door's handler. It takes events an EventBridge
// rule put on its intake queue (Stripe's partner events, or any producer's),
// finds each one's source and tenant, reads its key and type by the
// source's rules, and claims and enqueues it as the receiver does
// (receiver.Handler.Claim). There is no signature: the bus's IAM policy
// decides who may put events.
//
// An event that cannot become a ledger event (no source or tenant takes it,
// no usable key, no time, a time far ahead or past its source's retention)
// is parked on the bus's dead-letter queue with the reason, counted
// (BusParked) and alarmed, never dropped. A ledger or queue outage fails
// the message; the intake queue hands it back, then redrives it there.
package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/jsoncheck"
)

// sources finds the source that takes an EventBridge source's events.
type sources interface {
	Bus(eventSource string, global time.Duration) (*source.BusSource, error)
}

// claimer is the receiver's claim path.
type claimer interface {
	Claim(ctx context.Context, d receiver.Delivery, log *slog.Logger) (r receiver.Result, body, traceID string)
}

// parker keeps an event that cannot be taken, with the reason.
type parker interface {
	Park(ctx context.Context, body, reason string, attrs map[string]string) error
}

var (
	_ sources = (*source.Registry)(nil)
	_ claimer = (*receiver.Handler)(nil)
	_ parker  = (*Parking)(nil)
)

// AgeMargin is kept between an event's age and its source's retention: an
// older event (an old dead letter redriven, an archive replay) may have lost
// its record, and taking it could apply its effects twice, so it is parked.
const AgeMargin = time.Hour

// MaxAhead is how far past the door's clock an event's time may be: AWS
// refuses requests signed more than 15 minutes off. A later time, like no
// time, would pass the age check forever.
const MaxAhead = 15 * time.Minute

// Handler is the bus door. Its fields are its dependencies.
type Handler struct {
	Sources sources
	Claim   claimer
	Park    parker
	// Retention is HOOKLEDGER_RETENTION, the default each source's
	// retention is raised from (source.Registry.Retentions).
	Retention time.Duration
	Log       *slog.Logger
	Metrics   *metric.Emitter // nil: no metrics
	Now       func() time.Time
}

// Outcome names what became of one message, for logs and metrics.
type Outcome string

// The bus door's outcomes.
const (
	Accepted  Outcome = "accepted"
	Duplicate Outcome = "duplicate"
	Parked    Outcome = "parked"
	Retry     Outcome = "retry"
)

// Handle takes an intake batch and reports the messages to hand back (outages, failed parkings).
func (h *Handler) Handle(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
	outcomes := make([]Outcome, len(batch.Records))
	var wg sync.WaitGroup
	for i, msg := range batch.Records {
		wg.Go(func() { outcomes[i] = h.one(ctx, msg) })
	}
	wg.Wait()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, o := range outcomes {
		if o == Retry {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: batch.Records[i].MessageId})
		}
	}
	return resp, nil
}

// delivery is an intake message read as far as it could be.
type delivery struct {
	envelope events.CloudWatchEvent
	src      *source.BusSource
	d        receiver.Delivery
}

func (h *Handler) one(ctx context.Context, msg events.SQSMessage) (out Outcome) {
	start := time.Now()
	log := h.logger().With("message_id", msg.MessageId)
	var (
		dl      delivery
		reason  string
		result  receiver.Result
		traceID string
	)
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "bus door panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = Retry
		}
		attrs := []any{"outcome", string(out), "duration_ms", time.Since(start).Milliseconds()}
		if dl.envelope.ID != "" {
			attrs = append(attrs, "eventbridge_id", dl.envelope.ID, "eventbridge_source", dl.envelope.Source)
		}
		if dl.d.Source != "" {
			attrs = append(attrs, "source", dl.d.Source, "tenant", dl.d.Tenant)
		}
		if dl.d.Key != "" {
			attrs = append(attrs, "event_id", dl.d.Key, "event_type", dl.d.Type)
		}
		if result != "" {
			attrs = append(attrs, "result", string(result))
		}
		if traceID != "" {
			attrs = append(attrs, "trace_id", traceID)
		}
		if reason != "" {
			attrs = append(attrs, "reason", reason)
		}
		level := slog.LevelInfo
		switch out {
		case Parked:
			level = slog.LevelError
		case Retry:
			level = slog.LevelWarn
		}
		log.Log(ctx, level, "bus event", attrs...)
		h.Metrics.Count(out.metrics()...)
	}()
	dl, reason = h.read(msg.Body)
	if reason != "" {
		return h.park(ctx, log, msg.Body, reason, dl)
	}
	dl.d.Trace = h.eventContext(ctx, msg)
	result, why, traceID := h.Claim.Claim(ctx, dl.d, log)
	switch result {
	case receiver.Accepted:
		return Accepted
	case receiver.Duplicate, receiver.Requeued:
		return Duplicate
	case receiver.Mismatched:
		// The record keeps its body, as over HTTP; counted and alarmed
		// as there.
		h.Metrics.Count(result.Metrics()...)
		return Duplicate
	case receiver.Unavailable:
		reason = "the ledger or the queue is unavailable; the intake queue hands the event back"
		return Retry
	default:
		reason = claimReason(result, why)
		return h.park(ctx, log, msg.Body, reason, dl)
	}
}

// metrics names the counts an outcome adds to. Taken events add to none: a
// metric costs every hour it gets data, and SQS counts what the door took.
func (o Outcome) metrics() []string {
	switch o {
	case Accepted, Duplicate:
		return nil
	case Parked:
		return []string{"BusParked"}
	default:
		return []string{"BusRetried"}
	}
}

// claimReason turns the claim path's refusal into a parking reason.
func claimReason(r receiver.Result, body string) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) == nil && e.Error != "" {
		return fmt.Sprintf("refused by the claim path (%s): %s", r, e.Error)
	}
	return fmt.Sprintf("refused by the claim path (%s)", r)
}

// read turns an intake message into a delivery, or says why it cannot be one.
func (h *Handler) read(raw string) (delivery, string) {
	var dl delivery
	if err := jsoncheck.Strict([]byte(raw)); err != nil {
		return dl, "not an EventBridge event: " + err.Error()
	}
	if err := json.Unmarshal([]byte(raw), &dl.envelope); err != nil {
		return dl, "not an EventBridge event: " + err.Error()
	}
	env := dl.envelope
	if env.Source == "" || env.ID == "" || len(env.Detail) == 0 {
		return dl, "not an EventBridge event: it has no source, id or detail (a rule target with an input transformer must pass the whole event)"
	}
	src, err := h.Sources.Bus(env.Source, h.Retention)
	if err != nil {
		return dl, err.Error()
	}
	dl.src = src
	dl.d.Source = src.Name
	var body bytes.Buffer
	if err := json.Compact(&body, env.Detail); err != nil || body.Len() == 0 || body.Bytes()[0] != '{' {
		return dl, "the event's detail is not a JSON object"
	}
	dl.d.Body = body.Bytes()
	account, err := accountOf(src.Provider, env, dl.d.Body)
	if err != nil {
		return dl, err.Error()
	}
	tenant, ok := src.Tenant(account)
	if !ok {
		if account == "" {
			return dl, fmt.Sprintf("source %q: the event names no account and no tenant takes any (\"accounts\": [\"*\"])", src.Name)
		}
		return dl, fmt.Sprintf("source %q: no tenant lists account %s in \"accounts\"", src.Name, account)
	}
	dl.d.Tenant = tenant
	// The source's own rules (Stripe: the detail's id and type; key_path,
	// type_path), else the EventBridge event's id and detail-type.
	ev, err := src.Keys().Unsigned(dl.d.Body, env.ID, env.DetailType)
	if err != nil {
		return dl, "no usable key: " + err.Error()
	}
	dl.d.Key, dl.d.Type = ev.ID, ev.Type
	if dl.d.Key == "" {
		return dl, "no usable key: the event has no id"
	}
	switch age := h.now().Sub(env.Time); {
	case env.Time.IsZero():
		return dl, "the event has no time: its age cannot be checked against how long its record lives, so taking it could apply its effects twice (EventBridge gives every event it delivers a time)"
	case age < -MaxAhead:
		return dl, fmt.Sprintf("the event's time %s is %s ahead of this clock, more than %s: its age cannot be checked against how long its record lives, so taking it could apply its effects twice",
			env.Time.UTC().Format(time.RFC3339), (-age).Round(time.Minute), MaxAhead)
	case age > src.Retention-AgeMargin:
		return dl, fmt.Sprintf("put on the bus %s ago, longer than source %q's records live (%s, less %s): its record may be gone, so taking it could apply its effects twice",
			age.Round(time.Minute), src.Name, src.Retention, AgeMargin)
	}
	dl.d.Digest = receiver.BusDigest(dl.d.Body)
	dl.d.ReplayGuard = src.ReplayGuard
	return dl, ""
}

// accountOf is the account that decides an event's tenant: for Stripe the
// connected account ("account", or a thin event's "context"; "" for the
// account's own), for an eventbridge source the AWS account that put it.
func accountOf(provider string, env events.CloudWatchEvent, detail []byte) (string, error) {
	if provider == source.ProviderEventBridge {
		return env.AccountID, nil
	}
	var d struct {
		Account json.RawMessage `json:"account"`
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(detail, &d); err != nil {
		return "", fmt.Errorf("the event's detail is not a Stripe event: %v", err)
	}
	var account string
	for _, raw := range []json.RawMessage{d.Account, d.Context} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("the Stripe event's account or context is %s, want a string (acct_...)", raw)
		}
		if account != "" && s != account {
			return "", fmt.Errorf("the Stripe event names two accounts (%s and %s)", account, s)
		}
		account = s
	}
	return account, nil
}

// park keeps the message on the bus's dead-letter queue with the reason; a
// parking that fails hands the message back to the intake queue.
func (h *Handler) park(ctx context.Context, log *slog.Logger, body, reason string, dl delivery) Outcome {
	attrs := map[string]string{}
	if dl.envelope.Source != "" {
		attrs[AttrEventSource] = dl.envelope.Source
	}
	if dl.d.Source != "" {
		attrs[AttrSource] = dl.d.Source
	}
	if err := h.Park.Park(ctx, body, reason, attrs); err != nil {
		log.ErrorContext(ctx, "could not park a bus event; the intake queue hands it back", "reason", reason, "error", err.Error())
		return Retry
	}
	return Parked
}

// eventContext is the trace context a bus event keeps: the one its intake
// message carries (EventBridge passes a traced putter's on), else a new
// trace, sampled as this invocation is.
func (h *Handler) eventContext(ctx context.Context, msg events.SQSMessage) trace.Context {
	if c, ok := trace.Parse(msg.Attributes[queue.TraceAttribute]); ok {
		return c
	}
	lam, _ := trace.FromLambda(ctx)
	return trace.NewRoot(h.now(), lam.Sampled)
}

func (h *Handler) logger() *slog.Logger { return fallback.Logger(h.Log) }

func (h *Handler) now() time.Time { return fallback.Now(h.Now) }
