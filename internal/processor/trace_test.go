package processor_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
)

const (
	processorInvocation = "Root=1-6b1161f5-aaaaaaaaaaaaaaaaaaaaaaaa;Parent=1111111111111111;Sampled=1"
	firstEvent          = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1"
	secondEvent         = "Root=1-6b1161f2-0123456789abcdef01234567;Parent=0011223344556677;Sampled=0"
)

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

func (r *spanRecorder) take() []*trace.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.spans
	r.spans = nil
	return s
}

func attrs(s *trace.Span) map[string]any {
	out := map[string]any{}
	for _, a := range s.Attrs {
		if a.IsInt {
			out[a.Key] = a.Int
		} else {
			out[a.Key] = a.Str
		}
	}
	return out
}

func inLambda(ctx context.Context, h string) context.Context {
	//lint:ignore SA1029 the key aws-lambda-go uses, a plain string
	return context.WithValue(ctx, "x-amzn-trace-id", h)
}

func withHeader(m events.SQSMessage, h string) events.SQSMessage {
	m.EventSourceARN = "arn:aws:sqs:eu-west-1:123456789012:hookledger-queue"
	m.Attributes = map[string]string{queue.TraceAttribute: h}
	return m
}

// The spans of an SQS-triggered Lambda, per the OpenTelemetry conventions:
// the batch's consumer span under the invocation's, with a link per
// message; per message a consumer span under it, linked to its message's
// context; per step a span under the event's, with its name, outcome,
// attempt and downstream key, and never the body.
func TestProcessorSpansLinkEachMessage(t *testing.T) {
	t.Parallel()
	f := setupSteps(t)
	rec := &spanRecorder{}
	f.h.Trace = rec.tracer()
	m1 := withHeader(f.message(t, "evt_span_1", "three"), firstEvent)
	m2 := withHeader(f.message(t, "evt_span_2", "one"), secondEvent)
	resp, err := f.h.Handle(inLambda(t.Context(), processorInvocation), events.SQSEvent{Records: []events.SQSMessage{m1, m2}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch: %v %v", resp, err)
	}
	spans := rec.take()
	lam, _ := trace.Parse(processorInvocation)
	c1, _ := trace.Parse(firstEvent)
	c2, _ := trace.Parse(secondEvent)
	var batch *trace.Span
	events, steps := map[string]*trace.Span{}, map[string][]*trace.Span{}
	for _, s := range spans {
		switch a := attrs(s); {
		case s.Parent == lam.Parent:
			batch = s
		case a["hookledger.event_id"] != nil:
			events[a["hookledger.event_id"].(string)] = s
		case strings.HasPrefix(s.Name, "step "):
			steps[string(s.Parent[:])] = append(steps[string(s.Parent[:])], s)
		}
	}
	if batch == nil || batch.Kind != trace.Consumer || batch.Name != "process hookledger-queue" || batch.Trace != lam.Trace {
		t.Fatalf("batch span %+v: want a consumer span under the invocation's", batch)
	}
	if len(batch.Links) != 2 || batch.Links[0] != c1 || batch.Links[1] != c2 {
		t.Errorf("batch links %v: want one per message, its header's context", batch.Links)
	}
	if a := attrs(batch); a["messaging.system"] != "aws_sqs" || a["messaging.batch.message_count"] != int64(2) || a["faas.trigger"] != "pubsub" {
		t.Errorf("batch attributes %v", a)
	}
	for id, c := range map[string]trace.Context{"evt_span_1": c1, "evt_span_2": c2} {
		ev := events[id]
		if ev == nil || ev.Parent != batch.ID || ev.Trace != batch.Trace || ev.Kind != trace.Consumer || len(ev.Links) != 1 || ev.Links[0] != c {
			t.Errorf("%s's span %+v: want a consumer span under the batch, linked to its message's context", id, ev)
			continue
		}
		if a := attrs(ev); a["hookledger.outcome"] != "processed" || a["hookledger.attempt"] != int64(1) || a["messaging.message.id"] != "m-"+id {
			t.Errorf("%s's span attributes %v", id, a)
		}
	}
	want := map[string][]string{"evt_span_1": {"a", "b", "c"}, "evt_span_2": {"a"}}
	for id, names := range want {
		got := steps[string(events[id].ID[:])]
		if len(got) != len(names) {
			t.Fatalf("%s: %d step spans, want %d", id, len(got), len(names))
		}
		for i, s := range got {
			a := attrs(s)
			if s.Name != "step "+names[i] || a["hookledger.step"] != names[i] || a["hookledger.step.outcome"] != "ran" ||
				a["hookledger.attempt"] != int64(1) || a["hookledger.downstream_key"] != key(id, names[i]) {
				t.Errorf("%s step %d: %s %v", id, i, s.Name, a)
			}
		}
	}
	for _, s := range spans {
		for _, a := range s.Attrs {
			if a.Str == "{}" {
				t.Errorf("span %s carries the body in %s", s.Name, a.Key)
			}
		}
	}
}

// On a retry, a step done earlier is recorded, not run; one its check
// proves done is recorded too; the attempt is the record's.
func TestStepSpansSayWhatTheRetryDid(t *testing.T) {
	t.Parallel()
	f := setupSteps(t)
	rec := &spanRecorder{}
	f.h.Trace = rec.tracer()
	msg := withHeader(f.message(t, "evt_span_retry", "three"), firstEvent)
	f.crash = "step.b.ran"
	if f.deliver(t, msg) {
		t.Fatal("the crashed run acknowledged its message")
	}
	rec.take()
	f.clock.Advance(2 * time.Minute) // the crashed run's lease ends
	if !f.deliver(t, msg) {
		t.Fatal("the retry did not finish the event")
	}
	outcomes := map[string]any{}
	for _, s := range rec.take() {
		if a := attrs(s); strings.HasPrefix(s.Name, "step ") {
			outcomes[a["hookledger.step"].(string)] = a["hookledger.step.outcome"]
			if a["hookledger.attempt"] != int64(2) {
				t.Errorf("%s: attempt %v, want 2", s.Name, a["hookledger.attempt"])
			}
		}
	}
	if outcomes["a"] != "recorded" || outcomes["b"] != "recorded" || outcomes["c"] != "ran" {
		t.Errorf("step outcomes %v: want a recorded (done before), b recorded (its check), c ran", outcomes)
	}
}

// The trace header costs the processor nothing in requests: a one-step
// event is still a claim and a complete, with spans on or off.
func TestTraceAddsNoRequestToTheProcessor(t *testing.T) {
	t.Parallel()
	for _, spans := range []bool{false, true} {
		f := setupSteps(t)
		if spans {
			f.h.Trace = (&spanRecorder{}).tracer()
		}
		msg := withHeader(f.message(t, "evt_cost", "one"), firstEvent)
		f.meter.Reset()
		if !f.deliver(t, msg) {
			t.Fatal("not processed")
		}
		if calls := f.meter.Snapshot(); len(calls) != 1 || calls["DynamoDB.UpdateItem"] != 2 {
			t.Errorf("spans %v: calls %v, want 2 UpdateItem (claim, complete) and nothing else", spans, calls)
		}
	}
}
