package receiver_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// Lambda's header as the receiver's invocation gets it.
const (
	invocation      = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=1:a1b2c3d4:0"
	invocationKept  = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1"
	laterInvocation = "Root=1-6b1161f9-00112233445566778899aabb;Parent=0123456789abcdef;Sampled=1"
)

// inLambda is ctx as aws-lambda-go hands it to an invocation with header h.
func inLambda(ctx context.Context, h string) context.Context {
	//lint:ignore SA1029 the key aws-lambda-go uses, a plain string
	return context.WithValue(ctx, "x-amzn-trace-id", h)
}

func (f fixture) handleIn(t *testing.T, ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := f.h.Handle(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// headers drains the queue and returns each message's AWSTraceHeader by event id.
func (f fixture) headers(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range awstest.DrainMessages(t, f.sqs, f.queue) {
		msg, err := queue.Decode(aws.ToString(m.Body))
		if err != nil {
			t.Fatal(err)
		}
		out[msg.ID] = m.Attributes[queue.TraceAttribute]
	}
	return out
}

// A new event keeps its invocation's trace header in its record and sends
// it with its message (without the Lineage), for the price it paid before:
// one conditional put, one send.
func TestNewEventKeepsAndSendsTheInvocationsTrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.Payload = config.PayloadOnTrouble
	if resp := f.handleIn(t, inLambda(t.Context(), invocation), f.stripeReq(t, "acme", stripeSecret, "evt_traced")); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if calls := f.meter.Snapshot(); len(calls) != 2 || calls["DynamoDB.PutItem"] != 1 || calls["SQS.SendMessage"] != 1 {
		t.Errorf("calls %v, want one PutItem and one SendMessage: the trace adds no request", calls)
	}
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_traced"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Trace != invocationKept {
		t.Errorf("record's trace %q, want %q", rec.Trace, invocationKept)
	}
	if got := f.headers(t)["evt_traced"]; got != invocationKept {
		t.Errorf("message's AWSTraceHeader %q, want %q", got, invocationKept)
	}
}

// hookledger dev has no invocation header: the receiver makes an unsampled
// one, at its clock's time, and keeps and sends it as on AWS.
func TestWithoutAnInvocationHeaderTheReceiverMakesOne(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_dev"))
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_dev"})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := trace.Parse(rec.Trace)
	if !ok || c.Sampled || c.Parent == [8]byte{} || !strings.HasPrefix(c.ID(), fmt.Sprintf("1-%08x-", f.clock.Now().Unix())) {
		t.Errorf("record's trace %q: want a root at the clock's time, a parent, not sampled", rec.Trace)
	}
	if got := f.headers(t)["evt_dev"]; got != rec.Trace {
		t.Errorf("message's AWSTraceHeader %q, want the record's %q", got, rec.Trace)
	}
}

// A duplicate of a received record re-enqueues it with the record's trace,
// not its own request's: the re-drive links back to the first delivery.
// Its line names the record's trace too.
func TestDuplicateReenqueueCarriesTheRecordsTrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var out bytes.Buffer
	f.h.Log = slog.New(slog.NewJSONHandler(&out, nil))
	req := f.stripeReq(t, "acme", stripeSecret, "evt_dup_trace")
	f.handleIn(t, inLambda(t.Context(), invocation), req)
	if got := f.headers(t)["evt_dup_trace"]; got != invocationKept {
		t.Fatalf("first message's header %q", got)
	}
	f.clock.Advance(receiver.DefaultRequeueAfter)
	resp := f.handleIn(t, inLambda(t.Context(), laterInvocation), req)
	if r := resp.Headers["X-Hookledger-Result"]; r != string(receiver.Requeued) {
		t.Fatalf("result %s, want %s", r, receiver.Requeued)
	}
	if got := f.headers(t)["evt_dup_trace"]; got != invocationKept {
		t.Errorf("re-enqueued message's header %q, want the record's %q", got, invocationKept)
	}
	lines := logLines(t, out.String(), "webhook")
	if len(lines) != 1 || lines[0]["trace_id"] != "1-6b1161f1-9fbe27bf175039d5222eae39" {
		t.Errorf("the duplicate's line %v: want the record's trace id", lines)
	}
}

// spanRecorder collects what a tracer exports.
type spanRecorder struct {
	mu    sync.Mutex
	spans []*trace.Span
}

func (r *spanRecorder) tracer() *trace.Tracer {
	return trace.NewTracer(func(_ context.Context, s []*trace.Span) error {
		r.mu.Lock()
		r.spans = append(r.spans, s...)
		r.mu.Unlock()
		return nil
	}, nil, nil)
}

func (r *spanRecorder) named(name string) *trace.Span {
	for _, s := range r.spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func attr(s *trace.Span, key string) (string, int64, bool) {
	for _, a := range s.Attrs {
		if a.Key == key {
			return a.Str, a.Int, true
		}
	}
	return "", 0, false
}

// With spans on, a delivery is a server span under Lambda's, with the
// claim and the send under it. The record keeps the server span as the
// event's parent; the message names the send span. No span carries the
// body.
func TestReceiverSpans(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &spanRecorder{}
	f.h.Trace = rec.tracer()
	req := f.stripeReq(t, "acme", stripeSecret, "evt_spans")
	f.handleIn(t, inLambda(t.Context(), invocation), req)
	lam, _ := trace.Parse(invocation)
	server, claim, send := rec.named("POST /webhooks/{source}/{tenant}"), rec.named("claim"), rec.named("send "+queue.Name(f.queue))
	if server == nil || claim == nil || send == nil || len(rec.spans) != 3 {
		t.Fatalf("spans %v: want the server span, claim and send", rec.spans)
	}
	if server.Kind != trace.Server || server.Trace != lam.Trace || server.Parent != lam.Parent {
		t.Errorf("server span %+v: want a server span under Lambda's", server)
	}
	if claim.Parent != server.ID || send.Parent != server.ID || send.Kind != trace.Producer {
		t.Errorf("claim %+v, send %+v: want both under the server span, send a producer", claim, send)
	}
	if v, _, _ := attr(claim, "hookledger.claim"); v != "created" {
		t.Errorf("claim span says %q", v)
	}
	if _, code, _ := attr(server, "http.response.status_code"); code != 200 {
		t.Errorf("server span's status code %d", code)
	}
	if v, _, _ := attr(server, "hookledger.event_id"); v != "evt_spans" {
		t.Errorf("server span's event id %q", v)
	}
	stored, err := f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_spans"})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := trace.Parse(stored.Trace); c != server.Context() {
		t.Errorf("record's trace %q: want the server span %x", stored.Trace, server.ID)
	}
	if c, _ := trace.Parse(f.headers(t)["evt_spans"]); c != send.Context() {
		t.Errorf("message's header names %x, want the send span %x", c.Parent, send.ID)
	}
	for _, s := range rec.spans {
		for _, a := range s.Attrs {
			if strings.Contains(a.Str, "amount_paid") {
				t.Errorf("span %s carries the body in %s", s.Name, a.Key)
			}
		}
	}
}

// A Lambda invocation X-Ray did not sample records no span, and its event
// carries the unsampled header as it came.
func TestUnsampledInvocationRecordsNoSpan(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rec := &spanRecorder{}
	f.h.Trace = rec.tracer()
	unsampled := strings.Replace(invocationKept, "Sampled=1", "Sampled=0", 1)
	f.handleIn(t, inLambda(t.Context(), unsampled), f.stripeReq(t, "acme", stripeSecret, "evt_unsampled"))
	if len(rec.spans) != 0 {
		t.Errorf("%d spans recorded for an unsampled invocation", len(rec.spans))
	}
	if got := f.headers(t)["evt_unsampled"]; got != unsampled {
		t.Errorf("message's header %q, want %q", got, unsampled)
	}
}
