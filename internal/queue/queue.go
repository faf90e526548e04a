// Package queue is the SQS side of hookledger: the message the receiver and
// the reclaimer enqueue and the processor consumes, a sender, and queue
// creation for local runs and tests.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/zip"
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
	V          int    `json:"v"`
	Source     string `json:"source"`
	Tenant     string `json:"tenant"`
	Key        string `json:"key"`
	Type       string `json:"type,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
	Body       []byte `json:"body,omitempty"`
	BodyGzip   []byte `json:"body_gz,omitempty"`     // the body, gzip-compressed; Decode restores Body
	ReceivedAt int64  `json:"received_at,omitempty"` // unix milliseconds
	// Ref is the body's key in the payload store (an S3 object) when it is
	// kept there; the message then carries the body only if it fits.
	Ref string `json:"ref,omitempty"`
}

// ID is the ledger identity the message is about.
func (m Message) ID() ledger.ID {
	return ledger.ID{Source: m.Source, Tenant: m.Tenant, Key: m.Key}
}

// Encode renders m as the message body, dropping the event body when the
// result would exceed MaxMessageBytes.
func Encode(m Message) (string, error) {
	m.V = 1
	if len(m.Body) >= compressAbove {
		if z := zip.Compress(m.Body); len(z) < len(m.Body) {
			m.Body, m.BodyGzip = nil, z
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode message %s: %w", m.ID(), err)
	}
	if len(b) > MaxMessageBytes {
		m.Body, m.BodyGzip = nil, nil
		if b, err = json.Marshal(m); err != nil {
			return "", fmt.Errorf("encode message %s: %w", m.ID(), err)
		}
	}
	return string(b), nil
}

// ErrMalformed marks a message the processor cannot read; it is never
// retried usefully and goes to the DLQ.
var ErrMalformed = errors.New("queue: malformed message")

// Decode parses a message body.
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
	if m.BodyGzip != nil {
		body, err := zip.Decompress(m.BodyGzip, maxBodyBytes)
		if err != nil {
			return Message{}, fmt.Errorf("%w: body_gz: %v", ErrMalformed, err)
		}
		m.Body, m.BodyGzip = body, nil
	}
	return m, nil
}

// API is the slice of the SQS client the sender calls.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Sender enqueues messages on one queue.
type Sender struct {
	API API
	URL string
}

// ErrUnavailable wraps SQS failures; the message may or may not be queued.
var ErrUnavailable = errors.New("queue: unavailable")

// Send enqueues m.
func (s *Sender) Send(ctx context.Context, m Message) error {
	body, err := Encode(m)
	if err != nil {
		return err
	}
	if _, err := s.API.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &s.URL, MessageBody: &body}); err != nil {
		return fmt.Errorf("enqueue %s: %w: %v", m.ID(), ErrUnavailable, err)
	}
	return nil
}

// AdminAPI is what CreateQueues needs.
type AdminAPI interface {
	CreateQueue(ctx context.Context, in *sqs.CreateQueueInput, opts ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// QueueSpec describes the queue pair CreateQueues makes.
type QueueSpec struct {
	Name              string
	VisibilityTimeout int // seconds; keep it at least 6x the processor timeout
	MaxReceiveCount   int // deliveries before a message moves to the DLQ
}

// CreateQueues creates name-dlq and name with a redrive policy to it, for
// local runs and tests (in AWS the SAM template owns them). It returns both
// URLs.
func CreateQueues(ctx context.Context, api AdminAPI, spec QueueSpec) (queueURL, dlqURL string, err error) {
	if spec.VisibilityTimeout <= 0 {
		spec.VisibilityTimeout = 30
	}
	if spec.MaxReceiveCount <= 0 {
		spec.MaxReceiveCount = 5
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
