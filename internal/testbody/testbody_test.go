package testbody

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"testing"
)

func TestJSONIsValidNearSizeAndCompressesLikeJSON(t *testing.T) {
	t.Parallel()
	for _, size := range Sizes {
		b := JSON("evt_1", size)
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%d: not JSON: %v", size, err)
		}
		if doc["id"] != "evt_1" || doc["event_id"] != "evt_1" {
			t.Fatalf("%d: ids missing", size)
		}
		if len(b) > size || len(b) < size*8/10 {
			t.Fatalf("size %d: got %d bytes", size, len(b))
		}
		if !bytes.Equal(b, JSON("evt_1", size)) {
			t.Fatalf("%d: not deterministic", size)
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write(b)
		zw.Close()
		if ratio := float64(len(b)) / float64(buf.Len()); ratio < 1.5 || ratio > 10 {
			t.Fatalf("%d: compression ratio %.1f is not that of real JSON", size, ratio)
		}
	}
}
