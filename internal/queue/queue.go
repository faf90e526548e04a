// Package queue is the SQS side of hookledger: the message the receiver and
// the reclaimer enqueue and the processor consumes, a sender, and queue
// creation for local runs and tests.
package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/dynamo"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// MaxMessageBytes is SQS's 1 MiB, the template's MaximumMessageSize. A body
// that would not fit, even compressed, is left out, and the processor reads
// it from the payload store or the ledger. Every body a ledger item can hold
// fits, so the happy path reads nothing.
const MaxMessageBytes = 1 << 20

// compressAbove is the body size from which the message carries it gzipped,
// when that is smaller. JSON compresses 3-4x, more than base64 costs, and
// large events stay in one 64 KB SQS billing chunk.
const compressAbove = 1024

// maxBodyBytes bounds a decompressed body (Lambda's request limit is 6 MB).
const maxBodyBytes = 8 << 20

// Message is one event on the queue.
type Message struct {
	V      int    `json:"v"`
	Source string `json:"source"`
	Tenant string `json:"tenant"`
	ID     string `json:"key"`
	Type   string `json:"type,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Body is the event's body, carried unless BodyOmitted is set. A nil
	// or empty Body is an empty body, which some providers deliver.
	Body       []byte `json:"body,omitempty"`
	BodyGzip   []byte `json:"body_gz,omitempty"`     // the body, gzip-compressed; Decode restores Body
	ReceivedAt int64  `json:"received_at,omitempty"` // unix milliseconds
	// Ref is the body's key in the S3 payload store when it is kept there;
	// the message then carries the body only if it fits.
	Ref string `json:"ref,omitempty"`
	// BodyOmitted marks a message without its body: too large, or the
	// sender did not have it (a Ref with a nil Body). The processor then
	// reads it from the payload store or the ledger.
	BodyOmitted bool `json:"body_omitted,omitempty"`
	// Trace is the event's trace header. It travels beside the body, as
	// the AWSTraceHeader system attribute (which SQS bills nothing for).
	Trace string `json:"-"`
}

// wire is a Message as Encode writes it: a carried body is always written,
// an empty one as "body":"", so a reader can tell it from a body left out.
// The previous version reads "" as an empty body too.
type wire struct {
	Message
	Body *[]byte `json:"body,omitempty"` // shadows Message.Body
}

// EmptyBodySHA256 is the hex SHA-256 of an empty body.
const EmptyBodySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Key is the ledger identity the message is about.
func (m Message) Key() ledger.Key {
	return ledger.Key{Source: m.Source, Tenant: m.Tenant, ID: m.ID}
}

// Encode renders m as the message body. The body rides along, empty or
// not, unless m omits it (BodyOmitted, or a Ref with a nil Body) or the
// message would exceed MaxMessageBytes; then body_omitted says so.
func Encode(m Message) (string, error) {
	m.V = 1
	if m.BodyOmitted || m.Ref != "" && m.Body == nil {
		m.Body, m.BodyOmitted = nil, true
	}
	w := wire{Message: m}
	w.BodyGzip = nil
	if !m.BodyOmitted {
		body := m.Body
		if body == nil {
			body = []byte{}
		}
		if z, ok := dynamo.Shrink(body, compressAbove); ok {
			w.BodyGzip = z
		} else {
			w.Body = &body
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("encode message %s: %w", m.Key(), err)
	}
	if len(b) > MaxMessageBytes {
		w.Body, w.BodyGzip, w.BodyOmitted = nil, nil, true
		if b, err = json.Marshal(w); err != nil {
			return "", fmt.Errorf("encode message %s: %w", m.Key(), err)
		}
	}
	return string(b), nil
}

// ErrMalformed marks a message the processor cannot read; it goes to the DLQ.
var ErrMalformed = errors.New("queue: malformed message")

// Decode parses a message body. Afterwards either BodyOmitted is set (Body
// is nil) or Body holds the body, non-nil even when empty.
func Decode(body string) (Message, error) {
	var m Message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.V != 1 {
		return Message{}, fmt.Errorf("%w: version %d, want 1", ErrMalformed, m.V)
	}
	if err := m.Key().Validate(); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case m.BodyGzip != nil:
		body, err := dynamo.Decompress(m.BodyGzip, maxBodyBytes)
		if err != nil {
			return Message{}, fmt.Errorf("%w: body_gz: %v", ErrMalformed, err)
		}
		m.Body, m.BodyGzip, m.BodyOmitted = body, nil, false
	case m.Body != nil:
		m.BodyOmitted = false // carried: a marker beside it is a contradiction the body wins
	case m.BodyOmitted:
	case m.Ref != "" || m.SHA256 != "" && m.SHA256 != EmptyBodySHA256:
		// No body and no marker: the previous version, which dropped empty
		// bodies and bodies left out alike. A Ref, or a digest other than
		// the empty body's, says the body was left out.
		m.BodyOmitted = true
	default:
		// The empty body's digest (or none, in hand-made messages): an empty
		// body. The ledger may not hold it (on-trouble never stores it).
		m.Body = []byte{}
	}
	return m, nil
}

// API is the slice of the SQS client the sender calls.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Sender enqueues messages on one queue. Each carries its tenant as the
// message group (GroupID): on AWS that makes a standard queue a fair queue,
// where one tenant's burst does not hold up the others.
type Sender struct {
	API API
	URL string
}

// ErrUnavailable wraps SQS failures of a whole call; the message may or may
// not be queued.
var ErrUnavailable = errors.New("queue: unavailable")

// Send enqueues m. Under a span (trace.With), it sends m as that span's
// child, a producer span.
func (s *Sender) Send(ctx context.Context, m Message) error {
	body, err := Encode(m)
	if err != nil {
		return err
	}
	sp := sendSpan(trace.SpanOf(ctx), s.URL, &m)
	defer sp.End()
	in := &sqs.SendMessageInput{QueueUrl: &s.URL, MessageBody: &body, MessageGroupId: aws.String(GroupID(m.Tenant)),
		MessageSystemAttributes: TraceAttributes(m.Trace)}
	out, err := s.API.SendMessage(ctx, in)
	if err != nil {
		sp.Fail(ErrUnavailable.Error())
		return fmt.Errorf("enqueue %s: %w: %v", m.Key(), ErrUnavailable, err)
	}
	sp.Str("messaging.message.id", aws.ToString(out.MessageId))
	return nil
}

// MaxGroupIDLen is the longest message group id SQS accepts.
const MaxGroupIDLen = 128

// GroupID is the message group of a tenant's events: the tenant itself when
// SQS accepts it (1 to 128 printable ASCII characters), else "~h" and a
// digest. Tenants sharing a group would share only their fair share.
func GroupID(tenant string) string {
	if validGroupID(tenant) {
		return tenant
	}
	sum := sha256.Sum256([]byte(tenant))
	return "~h" + hex.EncodeToString(sum[:16])
}

func validGroupID(s string) bool {
	if s == "" || len(s) > MaxGroupIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '!' || s[i] > '~' {
			return false
		}
	}
	return true
}
