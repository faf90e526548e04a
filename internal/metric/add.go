package metric

import (
	"encoding/json"
	"sort"
)

// Add writes one line adding each count to its metric, zeros included (a
// zero is data: an alarm on the metric sees a healthy period, not a gap).
func (e *Emitter) Add(counts map[string]int) {
	if e == nil || len(counts) == 0 {
		return
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	defs := make([]definition, len(names))
	doc := map[string]any{"Stage": e.stage}
	for i, n := range names {
		defs[i] = definition{Name: n, Unit: "Count"}
		doc[n] = counts[n]
	}
	doc["_aws"] = map[string]any{
		"Timestamp":         e.now().UnixMilli(),
		"CloudWatchMetrics": []directive{{Namespace: Namespace, Dimensions: [][]string{{"Stage"}}, Metrics: defs}},
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
