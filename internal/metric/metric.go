// Package metric writes CloudWatch Embedded Metric Format lines on the
// function's output, which CloudWatch Logs turns into metrics with a Stage
// dimension: no agent, no dependency, no API call on the hot path.
//
// Format: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
package metric

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of every metric.
const Namespace = "hookledger"

// Emitter writes counts. A nil *Emitter discards them: handlers need no checks.
type Emitter struct {
	w     io.Writer
	stage string
	now   func() time.Time
	mu    sync.Mutex
}

// New returns an emitter writing to w with the given Stage dimension value.
func New(w io.Writer, stage string) *Emitter {
	return &Emitter{w: w, stage: stage, now: time.Now}
}

type definition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []definition `json:"Metrics"`
}

// Count writes one line adding 1 to each named metric.
func (e *Emitter) Count(names ...string) {
	if e == nil || len(names) == 0 {
		return
	}
	counts := make(map[string]int, len(names))
	for _, n := range names {
		counts[n] = 1
	}
	e.write(names, counts)
}

// Add writes one line adding each non-zero count to its metric (none when all are zero).
func (e *Emitter) Add(counts map[string]int) {
	if e == nil {
		return
	}
	names := make([]string, 0, len(counts))
	for n, v := range counts {
		if v != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	e.write(names, counts)
}

func (e *Emitter) write(names []string, counts map[string]int) {
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
