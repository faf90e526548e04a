package trace_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/trace"
)

// recorder is a tracer whose exports land in memory.
type recorder struct {
	mu    sync.Mutex
	spans []*trace.Span
}

func (r *recorder) export(_ context.Context, spans []*trace.Span) error {
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	r.mu.Unlock()
	return nil
}

func newRecorder() (*trace.Tracer, *recorder) {
	r := &recorder{}
	return trace.NewTracer(r.export, nil, nil), r
}

// With spans off, every span operation is a no-op on nil: no span
// object, no allocation.
func TestOffCostsNothing(t *testing.T) {
	var tr *trace.Tracer
	parent, _ := trace.Parse(lambdaHeader)
	ctx := t.Context()
	n := testing.AllocsPerRun(100, func() {
		sp := tr.Start(trace.Server, "POST", "/webhooks/{source}/{tenant}", parent)
		c := trace.With(ctx, sp)
		ch := trace.SpanOf(c).Child(trace.Producer, "send", "queue")
		ch = ch.Continue(lambdaHeader, trace.Producer, "send", "queue")
		ch.Str("k", "v")
		ch.Int("n", 1)
		ch.Link(parent)
		ch.Fail("no")
		ch.End()
		sp.End()
		tr.Flush(c)
		if sp != nil || ch != nil || sp.Context().Valid() {
			t.Fatal("a nil tracer started a span")
		}
	})
	if n != 0 {
		t.Errorf("span operations with spans off allocate %v times", n)
	}
}

func TestSpansNestAndFollowTheSamplingDecision(t *testing.T) {
	t.Parallel()
	tr, rec := newRecorder()
	sampled, _ := trace.Parse(lambdaHeader)
	unsampled := sampled
	unsampled.Sampled = false
	if sp := tr.Start(trace.Server, "x", "", unsampled); sp != nil {
		t.Error("a span started under a parent that is not sampled")
	}
	root := tr.Start(trace.Server, "POST", "/webhooks/{source}/{tenant}", sampled)
	child := root.Child(trace.Internal, "claim", "")
	child.Str("hookledger.claim", "created")
	child.End()
	root.End()
	fresh := tr.Start(trace.Server, "reclaim", "", trace.Context{})
	fresh.End()
	tr.Flush(t.Context())
	if len(rec.spans) != 3 {
		t.Fatalf("%d spans exported, want 3", len(rec.spans))
	}
	c, r, f := rec.spans[0], rec.spans[1], rec.spans[2]
	if r.Name != "POST /webhooks/{source}/{tenant}" || r.Trace != sampled.Trace || r.Parent != sampled.Parent || r.Kind != trace.Server {
		t.Errorf("root span %+v: want a server span under Lambda's parent", r)
	}
	if c.Trace != r.Trace || c.Parent != r.ID || c.Name != "claim" || len(c.Attrs) != 1 || c.Attrs[0].Str != "created" {
		t.Errorf("child %+v: want the root's trace, the root as parent, its attribute", c)
	}
	if !f.Context().Valid() || f.Trace == sampled.Trace || f.Parent != [8]byte{} {
		t.Errorf("a span without a parent context %+v: want a root in a new trace", f)
	}
	if c.Ended.Before(c.Began) || r.Ended.Before(c.Ended) {
		t.Error("span times out of order")
	}
}

// A re-drive or a duplicate's re-enqueue sends in the event's trace, under
// the span the record's header names, linked to the run or request it is
// part of.
func TestContinueSendsInTheEventsTraceLinkedToTheCurrentSpan(t *testing.T) {
	t.Parallel()
	tr, rec := newRecorder()
	run := tr.Start(trace.Server, "reclaim", "", trace.Context{})
	ev, _ := trace.Parse(lambdaHeader)
	send := run.Continue(ev.Header(), trace.Producer, "send", "q")
	same := run.Continue(run.Context().Header(), trace.Producer, "send", "q")
	bare := run.Continue("", trace.Producer, "send", "q")
	ev.Sampled = false
	if sp := run.Continue(ev.Header(), trace.Producer, "send", "q"); sp != nil {
		t.Error("a span started in an event's trace that is not sampled")
	}
	for _, sp := range []*trace.Span{send, same, bare, run} {
		sp.End()
	}
	tr.Flush(t.Context())
	if send.Trace != ev.Trace || send.Parent != ev.Parent || len(send.Links) != 1 || send.Links[0] != run.Context() {
		t.Errorf("send %+v: want the event's trace, its header's parent, a link to the run", send)
	}
	if same.Parent != run.ID || len(same.Links) != 0 {
		t.Errorf("a send in the current span's own trace %+v: want a plain child", same)
	}
	if bare.Trace != run.Trace || bare.Parent != run.ID {
		t.Errorf("a send without a header %+v: want a child of the current span", bare)
	}
	if len(rec.spans) != 4 {
		t.Errorf("%d spans exported, want 4", len(rec.spans))
	}
}

// A failed export is dropped and logged, never an error of the
// invocation; a flush near the deadline does not start an export.
func TestFlushNeverOutlivesTheInvocation(t *testing.T) {
	t.Parallel()
	calls := 0
	tr := trace.NewTracer(func(context.Context, []*trace.Span) error { calls++; return errors.New("collector down") }, nil, nil)
	tr.Start(trace.Server, "a", "", trace.Context{}).End()
	tr.Flush(t.Context())
	tr.Flush(t.Context()) // nothing left to send
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	tr.Start(trace.Server, "b", "", trace.Context{}).End()
	tr.Flush(ctx)
	if calls != 1 {
		t.Errorf("%d exports, want 1 (none with nothing to send, none within the margin before the deadline)", calls)
	}
}
