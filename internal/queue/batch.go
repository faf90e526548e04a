package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/trace"
)

// BatchAPI is the slice of the SQS client the batch sender calls.
type BatchAPI interface {
	API
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ BatchAPI = (*sqs.Client)(nil)

// Batch limits: SQS takes at most 10 entries per SendMessageBatch, within
// a payload limit (1 MiB on AWS since 2025, 256 KiB before). Batches here
// stay within 256 KiB; a larger message goes in a batch of its own.
const (
	MaxBatchEntries = 10
	maxBatchBytes   = 256 * 1024
)

// Errors of a batch entry that was not queued.
var (
	// ErrNotSent: SQS failed the entry on its side (throttling, an internal
	// error); sending it again later may work.
	ErrNotSent = errors.New("queue: entry not sent")
	// ErrRejected: SQS refused the entry as the sender's fault (its
	// contents, its size); the same message would be refused again.
	ErrRejected = errors.New("queue: entry rejected")
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
// allow and reports each message's fate. errs[i] is nil when msgs[i] was
// queued. It wraps ErrNotSent or ErrRejected when SQS failed that entry (not
// queued), and ErrUnavailable when the whole call failed (maybe queued). A
// failed entry is reported, never sent twice. Under a span, each message
// gets a producer span in its event's trace (Sender.Send).
func (s *BatchSender) SendBatch(ctx context.Context, msgs []Message) []error {
	errs := make([]error, len(msgs))
	var spans []*trace.Span // spans[i] is msgs[i]'s, under a span
	defer func() { endSpans(spans, errs) }()
	var batch []int // indexes into msgs
	var entries []types.SendMessageBatchRequestEntry
	size := 0
	flush := func() {
		if len(entries) > 0 {
			s.sendBatch(ctx, msgs, batch, entries, errs)
		}
		batch, entries, size = nil, nil, 0
	}
	cur := trace.SpanOf(ctx)
	for i, m := range msgs {
		if cur != nil {
			spans = append(spans, sendSpan(cur, s.URL, &m))
		}
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
			MessageSystemAttributes: TraceAttributes(m.Trace),
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
			errs[i] = fmt.Errorf("enqueue %s: %w: %v", msgs[i].Key(), ErrUnavailable, err)
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
		if err != nil || !slices.Contains(batch, i) {
			continue // not one of ours; the loop below reports what stays unanswered
		}
		answered[id] = true
		kind := ErrNotSent
		if f.SenderFault {
			kind = ErrRejected
		}
		errs[i] = fmt.Errorf("enqueue %s: %w: %s: %s", msgs[i].Key(), kind, aws.ToString(f.Code), aws.ToString(f.Message))
	}
	for _, i := range batch {
		if !answered[strconv.Itoa(i)] {
			// SQS answers every entry; one it did not mention is unknown.
			errs[i] = fmt.Errorf("enqueue %s: %w: SendMessageBatch did not answer this entry", msgs[i].Key(), ErrUnavailable)
		}
	}
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
