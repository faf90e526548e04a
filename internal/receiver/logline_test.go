package receiver_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// logLines decodes the JSON lines whose msg is msg.
func logLines(t *testing.T, out, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// An info line is billed by the byte on every delivery: an accepted event's
// names the event once (key and type), a duplicate's only its key (the
// first delivery's line has the type), and neither repeats the 200 that its
// result implies. An answer other than 200 keeps its status.
func TestInfoLinesCarryEachFieldOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var out bytes.Buffer
	f.h.Log = slog.New(slog.NewJSONHandler(&out, nil))
	req := f.stripeReq(t, "acme", stripeSecret, "evt_lines")
	f.handle(t, req)
	f.handle(t, req)
	f.handle(t, f.stripeReq(t, "acme", "whsec_wrong", "evt_lines_forged"))
	lines := logLines(t, out.String(), "webhook")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %q", out.String())
	}
	want := [][]string{
		{"duration_ms", "event_key", "event_type", "level", "msg", "result", "source", "tenant", "time"},
		{"duration_ms", "event_key", "level", "msg", "result", "source", "tenant", "time"},
	}
	for i, w := range want {
		if got := keys(lines[i]); !slices.Equal(got, w) {
			t.Errorf("line %d (%v): keys %v, want %v", i, lines[i]["result"], got, w)
		}
	}
	if lines[2]["http_status"] != float64(401) {
		t.Errorf("a refused delivery's line %v: want http_status 401", lines[2])
	}
}
