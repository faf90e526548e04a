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
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/dynamo"
	"github.com/hookledger/hookledger/ledger"
)

// MaxMessageBytes is the largest message the sender puts on the queue: SQS's
// 1 MiB (the template sets the queue's MaximumMessageSize to it). A message
// whose body would not fit, even compressed, goes without it and the
// processor reads the body from the payload store (Ref) or the ledger. With
// 1 MiB every body a ledger item can hold (400 KB after compression) rides
// in the message, so the processor reads nothing on the happy path.
const MaxMessageBytes = 1 << 20

// compressAbove is the body size from which the message carries the body
// gzip-compressed (when that is smaller): JSON compresses 3-4x, which more
// than pays for base64 and keeps large events in one 64 KB SQS billing
// chunk and in the message at all.
const compressAbove = 1024

// maxBodyBytes bounds a decompressed body (Lambda's request limit is 6 MB).
const maxBodyBytes = 8 << 20

// Message is one event on the queue.
type Message struct {
	V      int    `json:"v"`
	Source string `json:"source"`
	Tenant string `json:"tenant"`
	Key    string `json:"key"`
	Type   string `json:"type,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Body is the event's body. Unless BodyOmitted is set, the message
	// carries it, and a nil or empty Body is an empty body (some providers
	// deliver those: GitHub's ping-like events, Standard Webhooks with no
	// payload), which the processor runs as such.
	Body       []byte `json:"body,omitempty"`
	BodyGzip   []byte `json:"body_gz,omitempty"`     // the body, gzip-compressed; Decode restores Body
	ReceivedAt int64  `json:"received_at,omitempty"` // unix milliseconds
	// Ref is the body's key in the payload store (an S3 object) when it is
	// kept there; the message then carries the body only if it fits.
	Ref string `json:"ref,omitempty"`
	// BodyOmitted marks a message that does not carry its body: it was too
	// large for the message (Encode sets it), or the sender did not have it
	// (a Ref with a nil Body means the same: a body kept by reference is
	// never empty). The processor then reads the body from the payload
	// store (Ref) or the ledger's payload item. Without it, the body rides
	// in the message, empty or not. Decode sets it for old messages that
	// left their body out without the marker (see Decode).
	BodyOmitted bool `json:"body_omitted,omitempty"`
}

// wire is a Message as Encode writes it: the body is written whenever the
// message carries it, an empty one as "body":"" (Message.Body's omitempty
// would drop it, and a reader could not tell it from a body left out).
// Processors of the previous version decode "" as an empty, non-nil body
// and run it as such, so the field stays compatible both ways.
type wire struct {
	Message
	Body *[]byte `json:"body,omitempty"` // shadows Message.Body
}

// EmptyBodySHA256 is the hex SHA-256 of an empty body.
const EmptyBodySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// ID is the ledger identity the message is about.
func (m Message) ID() ledger.ID {
	return ledger.ID{Source: m.Source, Tenant: m.Tenant, Key: m.Key}
}

// Encode renders m as the message body. The body rides in the message (an
// empty body as an empty body) unless m.BodyOmitted is set, m has a Ref
// and a nil Body, or the result would exceed MaxMessageBytes: then the
// message says so (body_omitted) and the processor reads the body from the
// payload store or the ledger.
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
		return "", fmt.Errorf("encode message %s: %w", m.ID(), err)
	}
	if len(b) > MaxMessageBytes {
		w.Body, w.BodyGzip, w.BodyOmitted = nil, nil, true
		if b, err = json.Marshal(w); err != nil {
			return "", fmt.Errorf("encode message %s: %w", m.ID(), err)
		}
	}
	return string(b), nil
}

// ErrMalformed marks a message the processor cannot read; it is never
// retried usefully and goes to the DLQ.
var ErrMalformed = errors.New("queue: malformed message")

// Decode parses a message body. Afterwards either BodyOmitted is set (the
// body is to be read from Ref or the ledger, Body is nil) or Body holds the
// body, non-nil even when empty.
func Decode(body string) (Message, error) {
	var m Message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.V != 1 {
		return Message{}, fmt.Errorf("%w: version %d, want 1", ErrMalformed, m.V)
	}
	if err := m.ID().Validate(); err != nil {
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
		// No body and no marker. Encode always writes a carried body, so
		// only a message of the previous version looks like this: it wrote
		// no marker and dropped empty bodies and bodies left out alike
		// (omitempty). Read as that version meant it where the message
		// tells: one naming a Ref left its body out (a body kept by
		// reference is never empty), and so did one whose digest is not
		// the empty body's (the receiver, the reclaimer and replay all send
		// the ledger's digest of the body). The processor reads such a body
		// from the payload store or the ledger, as that version did.
		m.BodyOmitted = true
	default:
		// No body, no marker, and a digest of the empty body (or none, as
		// only hand-made messages have): an empty body. The previous
		// version read this one from the ledger, where under
		// HOOKLEDGER_PAYLOAD=on-trouble it is not, and retried it until
		// it was dead.
		m.Body = []byte{}
	}
	return m, nil
}

// API is the slice of the SQS client the sender calls.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// BatchAPI is the slice of the SQS client the batch sender calls.
type BatchAPI interface {
	API
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ BatchAPI = (*sqs.Client)(nil)

// Sender enqueues messages on one queue. Every message carries its tenant
// as the message group (see GroupID), which turns a standard queue into a
// fair queue on AWS: one tenant's burst does not hold up the others.
type Sender struct {
	API API
	URL string
}

// Errors of Send and SendBatch.
var (
	// ErrUnavailable wraps SQS failures of a whole call; the message may or
	// may not be queued.
	ErrUnavailable = errors.New("queue: unavailable")
	// ErrNotSent marks a batch entry SQS failed on its side (throttling, an
	// internal error): the message was not queued; sending it again later
	// may work.
	ErrNotSent = errors.New("queue: entry not sent")
	// ErrRejected marks a batch entry SQS refused as the sender's fault (its
	// contents, its size): the message was not queued, and the same message
	// would be refused again.
	ErrRejected = errors.New("queue: entry rejected")
)

// Send enqueues m.
func (s *Sender) Send(ctx context.Context, m Message) error {
	body, err := Encode(m)
	if err != nil {
		return err
	}
	in := &sqs.SendMessageInput{QueueUrl: &s.URL, MessageBody: &body, MessageGroupId: aws.String(GroupID(m.Tenant))}
	if _, err := s.API.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("enqueue %s: %w: %v", m.ID(), ErrUnavailable, err)
	}
	return nil
}

// Batch limits: SQS takes at most 10 entries per SendMessageBatch, and the
// entries' bodies together must stay within the batch payload limit (1 MiB
// on AWS since 2025, 256 KiB before); batches here stay within 256 KiB, and
// a message that alone exceeds it goes in a batch of its own.
const (
	MaxBatchEntries = 10
	maxBatchBytes   = 256 * 1024
)

// BatchSender enqueues messages on one queue in batches, and reads the
// queue's depth: the reclaimer's sender.
type BatchSender struct {
	API BatchAPI
	URL string
}

// Send enqueues m alone, as Sender.Send does.
func (s *BatchSender) Send(ctx context.Context, m Message) error {
	return (&Sender{API: s.API, URL: s.URL}).Send(ctx, m)
}

// SendBatch enqueues msgs with as few SendMessageBatch calls as the limits
// allow and reports each message's fate: errs[i] is nil when msgs[i] was
// queued, wraps ErrNotSent or ErrRejected when SQS failed that entry (it was
// not queued), and wraps ErrUnavailable when its call failed as a whole (it
// may or may not be queued). No message is sent twice by one SendBatch: an
// entry SQS failed is reported, not retried here.
func (s *BatchSender) SendBatch(ctx context.Context, msgs []Message) []error {
	errs := make([]error, len(msgs))
	var batch []int // indexes into msgs
	var entries []types.SendMessageBatchRequestEntry
	size := 0
	flush := func() {
		if len(entries) > 0 {
			s.sendBatch(ctx, msgs, batch, entries, errs)
		}
		batch, entries, size = nil, nil, 0
	}
	for i, m := range msgs {
		body, err := Encode(m)
		if err != nil {
			errs[i] = fmt.Errorf("%w: %w", ErrRejected, err)
			continue
		}
		if len(entries) == MaxBatchEntries || len(entries) > 0 && size+len(body) > maxBatchBytes {
			flush()
		}
		entries = append(entries, types.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body), MessageGroupId: aws.String(GroupID(m.Tenant)),
		})
		batch = append(batch, i)
		size += len(body)
	}
	flush()
	return errs
}

func (s *BatchSender) sendBatch(ctx context.Context, msgs []Message, batch []int, entries []types.SendMessageBatchRequestEntry, errs []error) {
	out, err := s.API.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &s.URL, Entries: entries})
	if err != nil {
		for _, i := range batch {
			errs[i] = fmt.Errorf("enqueue %s: %w: %v", msgs[i].ID(), ErrUnavailable, err)
		}
		return
	}
	answered := make(map[string]bool, len(entries))
	for _, ok := range out.Successful {
		answered[aws.ToString(ok.Id)] = true
	}
	for _, f := range out.Failed {
		id := aws.ToString(f.Id)
		i, err := strconv.Atoi(id)
		if err != nil || !contains(batch, i) {
			continue // not one of ours; the loop below reports what stays unanswered
		}
		answered[id] = true
		kind := ErrNotSent
		if f.SenderFault {
			kind = ErrRejected
		}
		errs[i] = fmt.Errorf("enqueue %s: %w: %s: %s", msgs[i].ID(), kind, aws.ToString(f.Code), aws.ToString(f.Message))
	}
	for _, i := range batch {
		if !answered[strconv.Itoa(i)] {
			// SQS answers every entry; one it did not mention is unknown.
			errs[i] = fmt.Errorf("enqueue %s: %w: SendMessageBatch did not answer this entry", msgs[i].ID(), ErrUnavailable)
		}
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Depth is the approximate number of messages waiting on the queue
// (visible: what a new message queues behind) and of those in flight
// (received, not yet deleted), in one request.
func (s *BatchSender) Depth(ctx context.Context) (waiting, inFlight int, err error) {
	visible, taken := types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible
	out, err := s.API.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &s.URL, AttributeNames: []types.QueueAttributeName{visible, taken}})
	if err != nil {
		return 0, 0, fmt.Errorf("queue depth: %w: %v", ErrUnavailable, err)
	}
	var n [2]int
	for i, name := range []types.QueueAttributeName{visible, taken} {
		if n[i], err = strconv.Atoi(out.Attributes[string(name)]); err != nil {
			return 0, 0, fmt.Errorf("queue depth: %w: %s %q", ErrUnavailable, name, out.Attributes[string(name)])
		}
	}
	return n[0], n[1], nil
}

// MaxGroupIDLen is the longest message group id SQS accepts.
const MaxGroupIDLen = 128

// GroupID is the message group a tenant's events carry: the tenant itself
// when SQS accepts it as a group id (1 to 128 characters, ASCII letters,
// digits and punctuation), otherwise "~h" and a digest of the tenant, so
// that any tenant the ledger stores can be sent. Two tenants sharing a group
// would only share their fair share of the queue, never their events.
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

// AdminAPI is what CreateQueues needs.
type AdminAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, opts ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// QueueSpec describes the queue pair CreateQueues makes.
type QueueSpec struct {
	// Name is the processing queue's name; its DLQ is Name-dlq. Letters,
	// digits, '-' and '_', at most MaxQueueNameLen characters.
	Name string
	// VisibilityTimeout is in seconds, 1 to MaxVisibilityTimeout; keep it at
	// least 6x the processor timeout. 0 means DefaultVisibilityTimeout.
	VisibilityTimeout int
	// MaxReceiveCount is the deliveries before a message moves to the DLQ,
	// 1 to MaxMaxReceiveCount. 0 means DefaultMaxReceiveCount.
	MaxReceiveCount int
}

// The limits and zero-value defaults of a QueueSpec.
const (
	// MaxQueueNameLen leaves room for the DLQ's "-dlq" within SQS's 80
	// characters.
	MaxQueueNameLen          = 80 - len("-dlq")
	MaxVisibilityTimeout     = 43200 // SQS's maximum, 12 hours
	MaxMaxReceiveCount       = 1000  // SQS's maximum in a redrive policy
	DefaultVisibilityTimeout = 30
	DefaultMaxReceiveCount   = 5
)

// ValidQueueName reports whether SQS accepts name, and name-dlq, as the name
// of a standard queue.
func ValidQueueName(name string) bool {
	if name == "" || len(name) > MaxQueueNameLen {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Validate reports what SQS would refuse in the spec, before anything is
// created. Zero values stand for the defaults.
func (spec QueueSpec) Validate() error {
	switch {
	case !ValidQueueName(spec.Name):
		return fmt.Errorf("queue name %q: want 1 to %d letters, digits, '-' or '_'", spec.Name, MaxQueueNameLen)
	case spec.VisibilityTimeout < 0 || spec.VisibilityTimeout > MaxVisibilityTimeout:
		return fmt.Errorf("visibility timeout %d s: want 1 to %d (0: %d)", spec.VisibilityTimeout, MaxVisibilityTimeout, DefaultVisibilityTimeout)
	case spec.MaxReceiveCount < 0 || spec.MaxReceiveCount > MaxMaxReceiveCount:
		return fmt.Errorf("max receive count %d: want 1 to %d (0: %d)", spec.MaxReceiveCount, MaxMaxReceiveCount, DefaultMaxReceiveCount)
	}
	return nil
}

// CreateQueues creates name-dlq and name with a redrive policy to it, for
// local runs and tests (in AWS the SAM template owns them). It returns both
// URLs. A zero VisibilityTimeout or MaxReceiveCount takes the default; a
// spec that Validate refuses creates nothing and returns its error.
func CreateQueues(ctx context.Context, api AdminAPI, spec QueueSpec) (queueURL, dlqURL string, err error) {
	if err := spec.Validate(); err != nil {
		return "", "", fmt.Errorf("create queues: %w", err)
	}
	if spec.VisibilityTimeout == 0 {
		spec.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if spec.MaxReceiveCount == 0 {
		spec.MaxReceiveCount = DefaultMaxReceiveCount
	}
	size := strconv.Itoa(MaxMessageBytes) // SQS's default is 256 KiB on AWS
	dlq, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(spec.Name + "-dlq"),
		Attributes: map[string]string{"MessageRetentionPeriod": "1209600", "MaximumMessageSize": size}})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s-dlq: %w", spec.Name, err)
	}
	attrs, err := api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", "", fmt.Errorf("read %s-dlq arn: %w", spec.Name, err)
	}
	redrive, _ := json.Marshal(map[string]string{
		"deadLetterTargetArn": attrs.Attributes["QueueArn"],
		"maxReceiveCount":     strconv.Itoa(spec.MaxReceiveCount),
	})
	q, err := api.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(spec.Name), Attributes: map[string]string{
		"VisibilityTimeout":      strconv.Itoa(spec.VisibilityTimeout),
		"RedrivePolicy":          string(redrive),
		"MessageRetentionPeriod": "1209600",
		"MaximumMessageSize":     size,
	}})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", spec.Name, err)
	}
	return *q.QueueUrl, *dlq.QueueUrl, nil
}
