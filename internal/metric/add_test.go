package metric

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestAddAllWritesCountsIncludingZeros(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	e := New(&buf, "prod")
	e.now = func() time.Time { return time.UnixMilli(1700000000123) }
	e.AddAll(map[string]int{"ReconcileMissing": 3, "ReconcileFailed": 0})
	var doc struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Metrics []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Stage            string
		ReconcileMissing int
		ReconcileFailed  *int
	}
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.AWS.CloudWatchMetrics[0].Metrics
	if len(m) != 2 || m[0].Name != "ReconcileFailed" || m[1].Name != "ReconcileMissing" || m[0].Unit != "Count" {
		t.Fatalf("directive %+v", m)
	}
	if doc.Stage != "prod" || doc.ReconcileMissing != 3 || doc.ReconcileFailed == nil || *doc.ReconcileFailed != 0 {
		t.Fatalf("members %+v", doc)
	}
	var nilEmitter *Emitter
	nilEmitter.AddAll(map[string]int{"X": 1}) // must not panic
}
