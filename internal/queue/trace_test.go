package queue_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
)

const (
	firstDelivery = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1"
	otherEvent    = "Root=1-6b1161f2-0123456789abcdef01234567;Parent=0011223344556677;Sampled=0"
)

// spans is a tracer whose exports land in memory.
type spans struct {
	mu  sync.Mutex
	got []*trace.Span
}

func (s *spans) tracer() *trace.Tracer {
	return trace.NewTracer(func(_ context.Context, sp []*trace.Span) error {
		s.mu.Lock()
		s.got = append(s.got, sp...)
		s.mu.Unlock()
		return nil
	}, nil, nil)
}

// batchEntries records the entries of every SendMessageBatch call a client
// makes, as the SDK is about to send them.
type batchEntries struct {
	mu      sync.Mutex
	entries []types.SendMessageBatchRequestEntry
}

func (b *batchEntries) option(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("test.batch-entries",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if batch, ok := in.Parameters.(*sqs.SendMessageBatchInput); ok {
				b.mu.Lock()
				b.entries = append(b.entries, batch.Entries...)
				b.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// The trace header travels as the AWSTraceHeader system attribute, on
// single sends and batches alike, never in the body; a message without one
// carries none. MiniStack keeps a single send's attribute and drops a batch
// entry's (lab/docs/emulator.md), so the batch's is read from its request.
func TestSendCarriesTheTraceHeader(t *testing.T) {
	t.Parallel()
	sent := &batchEntries{}
	f := setupSQS(t, sent.option)
	if err := f.snd.Send(t.Context(), queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_single", Trace: firstDelivery}); err != nil {
		t.Fatal(err)
	}
	for i, err := range f.snd.SendBatch(t.Context(), []queue.Message{
		{Source: "stripe", Tenant: "acme", ID: "evt_batch", Trace: otherEvent},
		{Source: "stripe", Tenant: "acme", ID: "evt_bare"},
	}) {
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if len(sent.entries) != 2 {
		t.Fatalf("%d batch entries sent, want 2", len(sent.entries))
	}
	if a := sent.entries[0].MessageSystemAttributes[queue.TraceAttribute]; aws.ToString(a.StringValue) != otherEvent || aws.ToString(a.DataType) != "String" {
		t.Errorf("the batch entry's AWSTraceHeader %+v, want the String %q", a, otherEvent)
	}
	if a := sent.entries[1].MessageSystemAttributes; a != nil {
		t.Errorf("an entry without a header carries system attributes %v", a)
	}
	want := map[string]string{"evt_single": firstDelivery, "evt_batch": "", "evt_bare": ""}
	got := map[string]string{}
	for _, m := range awstest.DrainMessages(t, f.sqs, f.url) {
		msg, err := queue.Decode(aws.ToString(m.Body))
		if err != nil {
			t.Fatal(err)
		}
		got[msg.ID] = m.Attributes[queue.TraceAttribute]
		if strings.Contains(aws.ToString(m.Body), "Root=") {
			t.Errorf("%s: the body carries the trace header: %s", msg.ID, aws.ToString(m.Body))
		}
	}
	for id, h := range want {
		if got[id] != h {
			t.Errorf("%s: AWSTraceHeader %q, want %q", id, got[id], h)
		}
	}
	if n := f.meter.Snapshot(); n["SQS.SendMessage"] != 1 || n["SQS.SendMessageBatch"] != 1 {
		t.Errorf("calls %v: the header adds none", n)
	}
}

// Under a span, a send is a producer span in its event's trace: a new
// event's under the receiver's span, a re-drive's under the span its
// record's header names, linked to the run. The message carries the send
// span as its parent.
func TestSendSpansContinueTheEventsTrace(t *testing.T) {
	t.Parallel()
	wire := &batchEntries{}
	f := setupSQS(t, wire.option)
	rec := &spans{}
	tr := rec.tracer()
	receiver := tr.Start(trace.Server, "POST", "/webhooks/{source}/{tenant}", trace.Context{})
	ctx := trace.With(t.Context(), receiver)
	if err := f.snd.Send(ctx, queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_new", Trace: receiver.Context().Header()}); err != nil {
		t.Fatal(err)
	}
	run := tr.Start(trace.Server, "reclaim", "", trace.Context{})
	for _, err := range f.snd.SendBatch(trace.With(t.Context(), run), []queue.Message{
		{Source: "stripe", Tenant: "acme", ID: "evt_redriven", Trace: firstDelivery},
		{Source: "stripe", Tenant: "acme", ID: "evt_unsampled", Trace: otherEvent},
	}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	tr.Flush(t.Context())
	if len(rec.got) != 2 {
		t.Fatalf("%d spans, want 2 (a sampled event's re-drive and the new event's send)", len(rec.got))
	}
	sent := map[string]*trace.Span{}
	for _, sp := range rec.got {
		attrs := map[string]string{}
		for _, a := range sp.Attrs {
			attrs[a.Key] = a.Str
		}
		if sp.Kind != trace.Producer || sp.Name != "send "+queue.Name(f.url) || attrs["messaging.system"] != "aws_sqs" ||
			attrs["messaging.destination.name"] != queue.Name(f.url) {
			t.Errorf("span %+v: want a producer span named after the queue, with messaging attributes", sp)
		}
		sent[attrs["hookledger.event_id"]] = sp
	}
	first, _ := trace.Parse(firstDelivery)
	if sp := sent["evt_new"]; sp == nil || sp.Trace != receiver.Trace || sp.Parent != receiver.ID || len(sp.Links) != 0 {
		t.Errorf("the new event's send %+v: want a child of the receiver's span", sp)
	}
	if sp := sent["evt_redriven"]; sp == nil || sp.Trace != first.Trace || sp.Parent != first.Parent || len(sp.Links) != 1 || sp.Links[0] != run.Context() {
		t.Errorf("the re-drive %+v: want the first delivery's trace and parent, linked to the run", sp)
	}
	headers := map[string]string{}
	for _, m := range awstest.DrainMessages(t, f.sqs, f.url) {
		msg, _ := queue.Decode(aws.ToString(m.Body))
		headers[msg.ID] = m.Attributes[queue.TraceAttribute]
	}
	for _, e := range wire.entries { // the emulator drops a batch entry's header
		msg, _ := queue.Decode(aws.ToString(e.MessageBody))
		headers[msg.ID] = aws.ToString(e.MessageSystemAttributes[queue.TraceAttribute].StringValue)
	}
	for id, sp := range sent {
		if c, ok := trace.Parse(headers[id]); !ok || c.Trace != sp.Trace || c.Parent != sp.ID {
			t.Errorf("%s's message header %q: want the send span %x as parent", id, headers[id], sp.ID)
		}
	}
	if headers["evt_unsampled"] != otherEvent {
		t.Errorf("an unsampled event's re-drive carries %q, want its record's header as is", headers["evt_unsampled"])
	}
}
