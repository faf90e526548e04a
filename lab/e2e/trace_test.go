//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// requireTraceKept checks that id's record keeps a trace header and that
// at least runs of the processor's event lines name it: the header went
// from the record into each message the processor received, re-drives too.
func (e *env) requireTraceKept(t *testing.T, id ledger.Key, runs int) {
	t.Helper()
	rec, err := e.ledger.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := trace.ID(rec.Trace)
	if want == "" {
		t.Fatalf("%s: record keeps trace %q, want the first delivery's header", id, rec.Trace)
	}
	cfg, err := sdkconfig.Load(t.Context(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	logs := cloudwatchlogs.NewFromConfig(cfg)
	group := pairs(t, "HOOKLEDGER_E2E_LOG_GROUPS")["processor"]
	var got []any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		got = nil
		var token *string
		for {
			out, err := logs.FilterLogEvents(t.Context(), &cloudwatchlogs.FilterLogEventsInput{LogGroupName: &group, NextToken: token})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range out.Events {
				var line map[string]any
				if json.Unmarshal([]byte(aws.ToString(ev.Message)), &line) == nil && line["msg"] == "event" && line["event_id"] == id.ID {
					got = append(got, line["trace_id"])
				}
			}
			if token = out.NextToken; token == nil {
				break
			}
		}
		if len(got) >= runs || time.Now().After(deadline) {
			break
		}
	}
	if len(got) < runs {
		t.Fatalf("%s: %d processor lines in %s, want %d", id, len(got), group, runs)
	}
	for _, tid := range got {
		if tid != want {
			t.Errorf("%s: processor lines name traces %v, want the record's %s on each", id, got, want)
			break
		}
	}
}
