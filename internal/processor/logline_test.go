package processor_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// A processed event's info line is billed by the byte for every event, and
// is its only one (the receiver's acceptance is at debug): it names the
// event (source, tenant, key, type, the trace id its message carries) and
// says what happened, without what only matters when something goes wrong
// (the message id). A warning keeps that too.
func TestInfoLineNamesTheEventOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var out bytes.Buffer
	f.h.Log = slog.New(slog.NewJSONHandler(&out, nil))
	f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{f.event(t, "evt_line_ok", "invoice.paid")}})
	f.h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{f.event(t, "evt_line_flaky", "flaky")}})
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "event" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("want 2 event lines, got %q", out.String())
	}
	var got []string
	for k := range lines[0] {
		got = append(got, k)
	}
	slices.Sort(got)
	if want := []string{"duration_ms", "event_id", "event_type", "level", "msg", "outcome", "source", "tenant", "time", "trace_id"}; !slices.Equal(got, want) {
		t.Errorf("processed: keys %v, want %v", got, want)
	}
	if lines[1]["message_id"] != "m-evt_line_flaky" || lines[1]["event_type"] != "flaky" || lines[1]["level"] != "WARN" {
		t.Errorf("a failed event's warning %v: want its message id and type", lines[1])
	}
	for _, l := range lines {
		if l["trace_id"] != "1-6b1161f1-9fbe27bf175039d5222eae39" {
			t.Errorf("%v: trace_id %v, want the root of the message's AWSTraceHeader", l["event_id"], l["trace_id"])
		}
	}
}
