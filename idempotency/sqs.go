package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// SQSConfig configures an SQS batch handler. Its Config selects the key
// from each message (default KeyPath "messageId": a redelivery of the
// same message is a repeat; select a business id from the body, e.g.
// "body.order_id", to also catch a producer that sent the same thing
// twice).
type SQSConfig struct {
	Config[events.SQSMessage, struct{}]
	// Concurrency runs up to this many messages of a batch at once on a
	// standard queue (default 1). FIFO queues always run in order.
	Concurrency int
}

// SQSHandler runs a record handler once per message key over SQS batches,
// reporting failed messages as partial batch failures. The event source
// mapping must enable ReportBatchItemFailures
// (FunctionResponseTypes: [ReportBatchItemFailures]); without it Lambda
// ignores the response and deletes the whole batch.
type SQSHandler struct {
	f    *Func[events.SQSMessage, struct{}]
	conc int
}

// SQS returns a batch handler that runs fn once per message key:
//
//	h, err := idempotency.SQS(store, "fulfil-order", fulfil, idempotency.SQSConfig{})
//	lambda.Start(h.Handle)
//
// A message whose key already completed is acknowledged without running
// fn. A message whose fn returns an error, whose key another invocation
// holds (ErrInProgress), whose payload mismatches, or which the store
// cannot serve, is reported as a batch item failure, so SQS redelivers it
// later (and, after the queue's maxReceiveCount, moves it to the DLQ).
// On a FIFO queue the first failure also fails every later message of the
// batch, keeping their order.
func SQS(s *Store, operation string, fn func(context.Context, events.SQSMessage) error, c SQSConfig) (*SQSHandler, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: %s: nil function", ErrInvalid, operation)
	}
	if c.Key == nil && c.KeyPath == "" {
		c.KeyPath = "messageId"
	}
	if c.Concurrency < 0 {
		return nil, fmt.Errorf("%w: %s: Concurrency %d is negative", ErrInvalid, operation, c.Concurrency)
	}
	f, err := Wrap(s, operation, func(ctx context.Context, m events.SQSMessage) (struct{}, error) {
		return struct{}{}, fn(ctx, m)
	}, c.Config)
	if err != nil {
		return nil, err
	}
	return &SQSHandler{f: f, conc: max(1, c.Concurrency)}, nil
}

// Handle processes a batch and reports the messages to redeliver.
func (h *SQSHandler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	// Always a list, never null: AWS reads null as "no failures", but
	// MiniStack's poller fails on it and redelivers the whole batch.
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	if len(ev.Records) == 0 {
		return resp, nil
	}
	failed := make([]bool, len(ev.Records))
	if strings.HasSuffix(ev.Records[0].EventSourceARN, ".fifo") || h.conc == 1 {
		fifo := strings.HasSuffix(ev.Records[0].EventSourceARN, ".fifo")
		for i, m := range ev.Records {
			if fifo && i > 0 && failed[i-1] {
				failed[i] = true
				continue
			}
			failed[i] = h.one(ctx, m) != nil
		}
	} else {
		sem := make(chan struct{}, h.conc)
		var wg sync.WaitGroup
		for i, m := range ev.Records {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				failed[i] = h.one(ctx, m) != nil
			})
		}
		wg.Wait()
	}
	for i, m := range ev.Records {
		if failed[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

// one runs a message; a panic becomes that message's failure, not the
// batch's (it is logged with its stack by the call).
func (h *SQSHandler) one(ctx context.Context, m events.SQSMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	_, info, err := h.f.Call(ctx, m)
	if err != nil && !errors.Is(err, ErrInProgress) && info.Outcome != Failed {
		h.f.s.log.WarnContext(ctx, "idempotency: message not processed; reported for redelivery",
			"operation", h.f.op, "message_id", m.MessageId, "outcome", string(info.Outcome), "error", err.Error())
	}
	return err
}
