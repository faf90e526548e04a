package receiver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

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
	// NoSecret is a 503: no signing secret of the tenant could be read or
	// used. It is a server-side cause, never a 401, which senders take as final.
	NoSecret Result = "unavailable_secret"
)

// Metrics names the counts an outcome adds to. The happy path adds to none:
// a custom metric costs $0.30 a month while it receives data, and the AWS
// metrics of the function and the queue count deliveries already
// (docs/deploy.md). What needs a person also counts NeedsOperator, the one
// metric its alarm watches.
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

type answer struct {
	status int
	result Result
	body   string
	ctype  string
	keyed  bool   // the event's key and type are fit for the log line
	trace  string // the event's trace id, once the claim path has one
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
	ansTooLarge     = jsonAnswer(http.StatusRequestEntityTooLarge, TooLarge, `{"error":"body too large"}`)
	ansBadBase64    = jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"body is not valid base64"}`)
)

func respond(a answer) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: a.status,
		Headers:    map[string]string{"Content-Type": a.ctype, "X-Hookledger-Result": string(a.result)},
		Body:       a.body,
	}
}

// logAnswer writes the delivery's one line. It is billed by the byte: the
// status only where the result does not imply 200, the type only where no
// earlier line of the event has it (a duplicate's: the processor's has).
func logAnswer(ctx context.Context, log *slog.Logger, a answer, ev webhook.Event, took time.Duration) {
	attrs := []any{"result", string(a.result)}
	if a.status != http.StatusOK {
		attrs = append(attrs, "http_status", a.status)
	}
	attrs = append(attrs, "duration_ms", took.Milliseconds())
	if ev.ID != "" {
		attrs = append(attrs, "event_id", ev.ID)
		if a.result != Duplicate && a.result != Requeued {
			attrs = append(attrs, "event_type", ev.Type)
		}
	}
	if a.trace != "" {
		attrs = append(attrs, "trace_id", a.trace)
	}
	level := slog.LevelInfo
	if a.result == Accepted {
		// The processor's line says what became of the event, and that it
		// came: one info line per event, not two.
		level = slog.LevelDebug
	}
	if a.status >= 500 {
		level = slog.LevelError
	} else if a.status >= 400 || a.result == Mismatched {
		level = slog.LevelWarn
	}
	log.Log(ctx, level, "webhook", attrs...)
}

// refused answers a delivery Verify refused.
func refused(ctx context.Context, err error, secrets source.Resolved, refs []source.Ref, log *slog.Logger) answer {
	switch rh, repeated := errors.AsType[*webhook.RepeatedHeaderError](err); {
	case repeated:
		// Checked first: a repeated id or type header after a valid
		// signature also wraps ErrNoKey.
		return repeatedHeader(rh.Header)
	case errors.Is(err, webhook.ErrMalformedBody):
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"malformed body"}`)
	case errors.Is(err, webhook.ErrNoKey):
		return jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"no idempotency key in the delivery"}`)
	case errors.Is(err, webhook.ErrNoSecret):
		// The secrets were read but none can be a key of this scheme (a
		// Standard Webhooks secret without whsec_, say): configuration.
		log.ErrorContext(ctx, "no usable signing secret for the provider", "reason", err.Error(),
			"secret_ref", refList(refs), "secret_problem", "not usable for this provider",
			"secret_fix", "store each of these secrets in the form the provider's dashboard shows it (docs/providers.md)")
		return ansNoSecret
	case errors.Is(err, webhook.ErrBadSignature) && !secrets.Only(source.ErrSecretGone):
		// A secret that could not be read may be the one the sender signed
		// with: let the sender retry. A forgery lands here too and raises
		// the alarm; it cannot make a secret unreadable, only show that one
		// is (docs/deploy.md, "A secret that cannot be read").
		secrets.LogFailures(ctx, log, slog.LevelError)
		log.ErrorContext(ctx, "signature matched none of the readable secrets while others could not be read",
			"error", secrets.Err().Error())
		return ansNoSecret
	default:
		log.WarnContext(ctx, "verification failed", "reason", err.Error())
		return ansUnauthorized
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

// repeatedHeader answers a delivery that carries a header the verifier
// reads once (signature, timestamp, id, type) more than once.
func repeatedHeader(name string) answer {
	// The name is the verifier's own (or a configured one, an HTTP token),
	// never sender text; Marshal keeps the body JSON whatever it is.
	body, _ := json.Marshal(map[string]string{"error": "repeated header " + name})
	return jsonAnswer(http.StatusBadRequest, BadRequest, string(body))
}

// checkIdentity is the identity's door (ledger.NewKey): every rule, once.
// The key's characters are answered before the type's, its size after.
func checkIdentity(ctx context.Context, d Delivery, log *slog.Logger) (ledger.Key, *answer) {
	id, idErr := ledger.NewKey(d.Source, d.Tenant, d.Key)
	var a answer
	switch typErr := ledger.CheckType(d.Type); {
	case errors.Is(idErr, ledger.ErrText):
		log.WarnContext(ctx, "unusable idempotency key", "reason", idErr.Error())
		a = jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"idempotency key has characters the pipeline cannot carry"}`)
	case errors.Is(typErr, ledger.ErrText):
		log.WarnContext(ctx, "unusable event type", "reason", typErr.Error())
		a = jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"event type has characters the pipeline cannot carry"}`)
	case typErr != nil:
		log.WarnContext(ctx, "event type too long", "bytes", len(d.Type), "limit", ledger.MaxType)
		a = jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"event type too long"}`)
	case idErr != nil:
		a = keyed(jsonAnswer(http.StatusBadRequest, BadRequest, `{"error":"idempotency key too long"}`))
	default:
		return id, nil
	}
	return id, &a
}
