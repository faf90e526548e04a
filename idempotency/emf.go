package idempotency

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"
)

// emfWriter writes counts as CloudWatch Embedded Metric Format lines: one
// JSON object per call on the function's output, which CloudWatch Logs
// turns into metrics (no agent, no API call on the hot path), under the
// namespace and dimensions the user chose. A nil *emfWriter discards them.
//
// Format: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
type emfWriter struct {
	w         io.Writer
	namespace string
	now       func() time.Time
	mu        sync.Mutex
}

func newEMFWriter(w io.Writer, namespace string) *emfWriter {
	return &emfWriter{w: w, namespace: namespace, now: time.Now}
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

// Count writes one line adding 1 to each named metric, with the given
// dimensions (name → value; one dimension set of all of them).
func (e *emfWriter) Count(dims map[string]string, names ...string) {
	if e == nil || len(names) == 0 {
		return
	}
	keys := make([]string, 0, len(dims))
	doc := map[string]any{}
	for k, v := range dims {
		keys = append(keys, k)
		doc[k] = v
	}
	sort.Strings(keys)
	defs := make([]emfMetric, len(names))
	for i, n := range names {
		defs[i] = emfMetric{Name: n, Unit: "Count"}
		doc[n] = 1
	}
	doc["_aws"] = map[string]any{
		"Timestamp":         e.now().UnixMilli(),
		"CloudWatchMetrics": []emfDirective{{Namespace: e.namespace, Dimensions: [][]string{keys}, Metrics: defs}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	b = append(b, '\n')
	e.mu.Lock()
	e.w.Write(b)
	e.mu.Unlock()
}
