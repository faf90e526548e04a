package metric

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCountWritesOneEMFLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	e := New(&buf, "prod")
	e.now = func() time.Time { return time.UnixMilli(1700000000123) }
	e.Count("Received", "Accepted")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Stage    string
		Received int
		Accepted int
	}
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.AWS.CloudWatchMetrics
	if doc.AWS.Timestamp != 1700000000123 || len(d) != 1 || d[0].Namespace != "hookledger" ||
		len(d[0].Dimensions) != 1 || d[0].Dimensions[0][0] != "Stage" || len(d[0].Metrics) != 2 ||
		d[0].Metrics[1].Name != "Accepted" || d[0].Metrics[1].Unit != "Count" {
		t.Fatalf("directive %+v", doc.AWS)
	}
	// Every metric and dimension named in the directive is a member of the root.
	if doc.Stage != "prod" || doc.Received != 1 || doc.Accepted != 1 {
		t.Fatalf("members %+v", doc)
	}
}

func TestNilEmitterDiscards(t *testing.T) {
	t.Parallel()
	var e *Emitter
	e.Count("Received") // must not panic
}

func TestAddWritesTheCountsInOneLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	e := New(&buf, "prod")
	e.Add(map[string]int{"Reclaimed": 25, "ReclaimUnsent": 0, "Dead": 1})
	e.Add(map[string]int{"Reclaimed": 0})
	var nilEmitter *Emitter
	nilEmitter.Add(map[string]int{"Reclaimed": 1})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["Reclaimed"] != 25.0 || doc["Dead"] != 1.0 || doc["ReclaimUnsent"] != nil {
		t.Fatalf("line %s", lines[0])
	}
	if !strings.Contains(lines[0], `"Metrics":[{"Name":"Dead","Unit":"Count"},{"Name":"Reclaimed","Unit":"Count"}]`) {
		t.Fatalf("metric definitions: %s", lines[0])
	}
}
