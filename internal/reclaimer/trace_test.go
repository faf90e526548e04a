package reclaimer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

const (
	firstDelivery = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1"
	unsampled     = "Root=1-6b1161f2-0123456789abcdef01234567;Parent=0011223344556677;Sampled=0"
)

// sentEntries records the SendMessageBatch entries as the SDK is about to
// send them: MiniStack drops an entry's AWSTraceHeader (lab/docs/emulator.md).
type sentEntries struct {
	mu      sync.Mutex
	entries []types.SendMessageBatchRequestEntry
}

func (s *sentEntries) option(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("test.sent-entries",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if b, ok := in.Parameters.(*sqs.SendMessageBatchInput); ok {
				s.mu.Lock()
				s.entries = append(s.entries, b.Entries...)
				s.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// byEvent is each sent entry's AWSTraceHeader by event id.
func (s *sentEntries) byEvent(t *testing.T) map[string]string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for _, e := range s.entries {
		m, err := queue.Decode(aws.ToString(e.MessageBody))
		if err != nil {
			t.Fatal(err)
		}
		out[m.ID] = aws.ToString(e.MessageSystemAttributes[queue.TraceAttribute].StringValue)
	}
	return out
}

func (f *fixture) traced(t *testing.T, key, header string) ledger.Key {
	t.Helper()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x", Trace: header}); err != nil {
		t.Fatal(err)
	}
	if err := f.l.PutPayload(t.Context(), id, []byte(`{"id":"`+key+`"}`), "x"); err != nil {
		t.Fatal(err)
	}
	return id
}

// A re-drive sends its record's trace header: the event's first delivery's.
func TestRedriveSendsTheRecordsTrace(t *testing.T) {
	t.Parallel()
	sent := &sentEntries{}
	f := setup(t, sent.option)
	f.traced(t, "evt_redrive_traced", firstDelivery)
	f.event(t, "evt_redrive_bare") // a record from before traces
	f.clock.Advance(2 * time.Minute)
	if rep := f.run(t); rep.Requeued != 2 {
		t.Fatalf("requeued %d, want 2", rep.Requeued)
	}
	got := sent.byEvent(t)
	if got["evt_redrive_traced"] != firstDelivery || got["evt_redrive_bare"] != "" {
		t.Errorf("re-driven headers %v: want the record's, and none for a record without one", got)
	}
}

// With spans on, each re-drive is a producer span in its event's trace,
// under the span its record names, linked to the run's span; the message
// names the re-drive span. An unsampled event gets no span and its header
// as stored.
func TestRedriveSpansContinueTheFirstDelivery(t *testing.T) {
	t.Parallel()
	sent := &sentEntries{}
	f := setup(t, sent.option)
	var mu sync.Mutex
	var spans []*trace.Span
	f.h.Trace = trace.NewTracer(func(_ context.Context, s []*trace.Span) error {
		mu.Lock()
		spans = append(spans, s...)
		mu.Unlock()
		return nil
	}, nil, nil)
	f.traced(t, "evt_span_redrive", firstDelivery)
	f.traced(t, "evt_span_unsampled", unsampled)
	f.clock.Advance(2 * time.Minute)
	f.run(t)
	var run, redrive *trace.Span
	for _, s := range spans {
		switch s.Kind {
		case trace.Server:
			run = s
		case trace.Producer:
			redrive = s
		}
	}
	if run == nil || run.Name != "reclaim" || redrive == nil || len(spans) != 2 {
		t.Fatalf("spans %v: want the run's and one re-drive's", spans)
	}
	first, _ := trace.Parse(firstDelivery)
	if redrive.Trace != first.Trace || redrive.Parent != first.Parent || len(redrive.Links) != 1 || redrive.Links[0] != run.Context() {
		t.Errorf("re-drive span %+v: want the first delivery's trace and parent, linked to the run %x", redrive, run.ID)
	}
	got := sent.byEvent(t)
	if c, _ := trace.Parse(got["evt_span_redrive"]); c != redrive.Context() {
		t.Errorf("re-driven header %q: want the re-drive span as parent", got["evt_span_redrive"])
	}
	if got["evt_span_unsampled"] != unsampled {
		t.Errorf("unsampled event's header %q, want its record's", got["evt_span_unsampled"])
	}
}

// The reclaimer's lines about an event carry its trace id.
func TestBurialLineCarriesTheTraceID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var out bytes.Buffer
	f.h.Log = slog.New(slog.NewJSONHandler(&out, nil))
	id := f.traced(t, "evt_giveup_traced", firstDelivery)
	created := f.get(t, id)
	f.clock.Advance(reclaimer.GiveUpAt(created).Sub(f.clock.Now()) + time.Minute)
	if rep := f.run(t); rep.Buried != 1 {
		t.Fatalf("buried %d, want 1", rep.Buried)
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "event dead" {
			if m["trace_id"] != "1-6b1161f1-9fbe27bf175039d5222eae39" {
				t.Errorf("burial line %v: want the record's trace id", m)
			}
			return
		}
	}
	t.Fatalf("no burial line in %s", out.String())
}
