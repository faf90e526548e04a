package processor

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
)

// The processor's spans follow the OpenTelemetry conventions for an
// SQS-triggered Lambda: a consumer span for the batch, linked to each
// message's trace context, and under it one per message (the event), linked
// to its message's; under that, one per step.

// batchSpan starts the batch's span under the invocation's trace context.
func (h *Handler) batchSpan(ctx context.Context, batch events.SQSEvent) *trace.Span {
	if h.Trace == nil {
		return nil
	}
	lam, _ := trace.FromLambda(ctx)
	q := "multiple_sources"
	if len(batch.Records) > 0 {
		q = queueName(batch.Records[0].EventSourceARN)
	}
	for _, m := range batch.Records {
		if queueName(m.EventSourceARN) != q {
			q = "multiple_sources"
		}
	}
	sp := h.Trace.Start(trace.Consumer, "process", q, lam)
	messaging(sp, q)
	sp.Str("faas.trigger", "pubsub")
	sp.Int("messaging.batch.message_count", int64(len(batch.Records)))
	for _, m := range batch.Records {
		c, _ := trace.Parse(m.Attributes[queue.TraceAttribute])
		sp.Link(c)
	}
	return sp
}

// eventSpan starts one message's span under the batch's, linked to the
// trace context the message carries.
func eventSpan(ctx context.Context, messageID, sourceARN string, m queue.Message) *trace.Span {
	sp := trace.SpanOf(ctx).Child(trace.Consumer, "process", queueName(sourceARN))
	if sp == nil {
		return nil
	}
	c, _ := trace.Parse(m.Trace)
	sp.Link(c)
	messaging(sp, queueName(sourceARN))
	sp.Str("messaging.message.id", messageID)
	if m.ID != "" {
		sp.Str("hookledger.source", m.Source)
		sp.Str("hookledger.tenant", m.Tenant)
		sp.Str("hookledger.event_id", m.ID)
		sp.Str("hookledger.event_type", m.Type)
	}
	return sp
}

func messaging(sp *trace.Span, q string) {
	sp.Str("messaging.system", "aws_sqs")
	sp.Str("messaging.operation.type", "process")
	sp.Str("messaging.destination.name", q)
}

// endEvent ends a message's span with its outcome, failed when the outcome
// returns the message or buries the event.
func endEvent(sp *trace.Span, out Outcome, detail error) {
	if sp == nil {
		return
	}
	sp.Str("hookledger.outcome", string(out))
	if !out.acked() || out == Dead || out == DeadIndeterminate {
		reason := string(out)
		if detail != nil {
			reason = detail.Error()
		}
		sp.Fail(reason)
	}
	sp.End()
}

// stepSpans records the attempt on the event's span and returns the step
// engine's hook that makes a span per step under it (nil without one).
func stepSpans(ev *trace.Span, attempt int) func(name, key string) func(bool, error) {
	if ev == nil {
		return nil
	}
	ev.Int("hookledger.attempt", int64(attempt))
	return func(name, key string) func(bool, error) {
		sp := ev.Child(trace.Internal, "step", name)
		sp.Str("hookledger.step", name)
		sp.Int("hookledger.attempt", int64(attempt))
		sp.Str("hookledger.downstream_key", key)
		return func(ran bool, err error) {
			var indet *engine.IndeterminateError
			switch {
			case err == nil && ran:
				sp.Str("hookledger.step.outcome", "ran")
			case err == nil:
				sp.Str("hookledger.step.outcome", "recorded") // done earlier, or its check proved it
			case errors.As(err, &indet):
				sp.Str("hookledger.step.outcome", "indeterminate")
			default:
				sp.Str("hookledger.step.outcome", "failed")
			}
			if err != nil {
				sp.Fail(err.Error())
			}
			sp.End()
		}
	}
}

// queueName is the queue an event source ARN names (arn:...:sqs:region:account:name).
func queueName(arn string) string { return arn[strings.LastIndexByte(arn, ':')+1:] }
