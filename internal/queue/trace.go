package queue

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/trace"
)

// TraceAttribute is the system attribute a message's trace header travels
// in, as the processor's SQS event hands it over (Attributes).
const TraceAttribute = string(types.MessageSystemAttributeNameAWSTraceHeader)

// TraceAttributes carries a trace header in TraceAttribute, as
// SendMessage's MessageSystemAttributes; none without one.
func TraceAttributes(header string) map[string]types.MessageSystemAttributeValue {
	if header == "" {
		return nil
	}
	return map[string]types.MessageSystemAttributeValue{
		TraceAttribute: {DataType: aws.String("String"), StringValue: aws.String(header)},
	}
}

// sendSpan starts the producer span of m's send to the queue at url, in
// m's event's trace (trace.Span.Continue), and makes it the parent m's
// header names. Without a current span cur, or in a trace not sampled,
// it starts none and m keeps its header.
func sendSpan(cur *trace.Span, url string, m *Message) *trace.Span {
	sp := cur.Continue(m.Trace, trace.Producer, "send", Name(url))
	if sp == nil {
		return nil
	}
	m.Trace = sp.Context().Header()
	sp.Str("messaging.system", "aws_sqs")
	sp.Str("messaging.operation.type", "send")
	sp.Str("messaging.destination.name", Name(url))
	sp.Str("hookledger.source", m.Source)
	sp.Str("hookledger.tenant", m.Tenant)
	sp.Str("hookledger.event_id", m.ID)
	return sp
}

// Name is the queue's name: the last segment of its URL.
func Name(url string) string { return url[strings.LastIndexByte(url, '/')+1:] }

// endSpans ends a batch's send spans, failed where its entry was not sent.
func endSpans(spans []*trace.Span, errs []error) {
	for i, sp := range spans {
		if errs[i] != nil {
			sp.Fail(errs[i].Error())
		}
		sp.End()
	}
}
