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

// An info line is billed by the byte on every delivery. An accepted
// event's is at debug: the processor's info line says what became of the
// event, and names it with its type. A duplicate's names only its key, and
// neither repeats the 200 that its result implies; an answer other than 200
// keeps its status. Every result but accepted stays at info or above. An
// event's lines carry its trace id, a duplicate's its record's.
func TestInfoLinesCarryEachFieldOnce(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		f := setup(t)
		var out bytes.Buffer
		f.h.Log = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: level}))
		req := f.stripeReq(t, "acme", stripeSecret, "evt_lines")
		f.handle(t, req)
		f.handle(t, req)
		f.handle(t, f.stripeReq(t, "acme", "whsec_wrong", "evt_lines_forged"))
		lines := logLines(t, out.String(), "webhook")
		want := [][]string{
			{"duration_ms", "event_id", "event_type", "level", "msg", "result", "source", "tenant", "time", "trace_id"},
			{"duration_ms", "event_id", "level", "msg", "result", "source", "tenant", "time", "trace_id"},
			{"duration_ms", "http_status", "level", "msg", "result", "source", "tenant", "time"},
		}
		levels := []string{"DEBUG", "INFO", "WARN"}
		if level == slog.LevelInfo {
			want, levels = want[1:], levels[1:]
		}
		if len(lines) != len(want) {
			t.Fatalf("at %s: want %d lines, got %q", level, len(want), out.String())
		}
		for i, w := range want {
			if got := keys(lines[i]); !slices.Equal(got, w) || lines[i]["level"] != levels[i] {
				t.Errorf("at %s, line %d (%v): %s, keys %v; want %s, %v", level, i, lines[i]["result"], lines[i]["level"], got, levels[i], w)
			}
		}
		if last := lines[len(lines)-1]; last["http_status"] != float64(401) {
			t.Errorf("a refused delivery's line %v: want http_status 401", last)
		}
		if level == slog.LevelDebug && lines[0]["trace_id"] != lines[1]["trace_id"] {
			t.Errorf("the duplicate's line says trace %v, the accepted event's %v: want the record's", lines[1]["trace_id"], lines[0]["trace_id"])
		}
	}
}
