package bus_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/trace"
)

const intakeTrace = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=1"

// A bus event keeps the trace its intake message came with (EventBridge
// passes a traced putter's on) in its record and its message; one without
// gets a trace of its own. The bus door's line carries the event's id.
func TestBusEventKeepsItsIntakeTrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var out bytes.Buffer
	f.h.Log = slog.New(slog.NewJSONHandler(&out, nil))
	batch := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "a", Body: envelope("eb-t1", stripeBus, "invoice.paid", "123456789012", f.clock.Now(), snapshot("evt_bus_traced", "acct_1ACME")),
			Attributes: map[string]string{queue.TraceAttribute: intakeTrace}},
		{MessageId: "b", Body: envelope("eb-t2", stripeBus, "invoice.paid", "123456789012", f.clock.Now(), snapshot("evt_bus_untraced", "acct_1ACME"))},
	}}
	if resp, err := f.h.Handle(t.Context(), batch); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v %v", resp, err)
	}
	traced, untraced := f.record(t, "stripe", "acme", "evt_bus_traced"), f.record(t, "stripe", "acme", "evt_bus_untraced")
	if traced.Trace != intakeTrace {
		t.Errorf("record's trace %q, want the intake message's", traced.Trace)
	}
	own, ok := trace.Parse(untraced.Trace)
	if !ok || own.ID() == trace.ID(intakeTrace) {
		t.Errorf("an event without an intake trace got %q: want one of its own", untraced.Trace)
	}
	sent := map[string]string{}
	for _, m := range awstest.DrainMessages(t, f.sqs, f.queue) {
		msg, _ := queue.Decode(aws.ToString(m.Body))
		sent[msg.ID] = m.Attributes[queue.TraceAttribute]
	}
	if sent["evt_bus_traced"] != intakeTrace || sent["evt_bus_untraced"] != untraced.Trace {
		t.Errorf("messages' headers %v: want each record's", sent)
	}
	ids := map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		if m["msg"] == "bus event" {
			ids[m["event_id"].(string)] = m["trace_id"]
		}
	}
	if ids["evt_bus_traced"] != trace.ID(intakeTrace) || ids["evt_bus_untraced"] != own.ID() {
		t.Errorf("bus event lines' trace ids %v", ids)
	}
}
