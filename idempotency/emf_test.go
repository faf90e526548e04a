package idempotency

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestEMFDimensions(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	e := newEMFWriter(&buf, "shop")
	e.now = func() time.Time { return time.UnixMilli(1700000000000) }
	e.Count(map[string]string{"Operation": "create-order"}, "IdempotencyHit", "IdempotencyCacheHit")
	var doc struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Operation           string
		IdempotencyHit      int
		IdempotencyCacheHit int
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.AWS.CloudWatchMetrics
	if len(d) != 1 || d[0].Namespace != "shop" || len(d[0].Dimensions) != 1 || d[0].Dimensions[0][0] != "Operation" ||
		len(d[0].Metrics) != 2 || doc.Operation != "create-order" || doc.IdempotencyHit != 1 || doc.IdempotencyCacheHit != 1 {
		t.Fatalf("line %s", buf.String())
	}
	var nilWriter *emfWriter
	nilWriter.Count(nil, "x") // must not panic
}
