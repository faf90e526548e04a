package metric

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"
)

// Writer writes EMF counts under a namespace and dimensions of the caller's
// choosing, for packages whose users pick their own (package idempotency).
// A nil *Writer discards them.
type Writer struct {
	w         io.Writer
	namespace string
	now       func() time.Time
	mu        sync.Mutex
}

// NewWriter returns a writer of EMF lines in namespace to w.
func NewWriter(w io.Writer, namespace string) *Writer {
	return &Writer{w: w, namespace: namespace, now: time.Now}
}

// Count writes one line adding 1 to each named metric, with the given
// dimensions (name → value; one dimension set of all of them).
func (e *Writer) Count(dims map[string]string, names ...string) {
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
	defs := make([]definition, len(names))
	for i, n := range names {
		defs[i] = definition{Name: n, Unit: "Count"}
		doc[n] = 1
	}
	doc["_aws"] = map[string]any{
		"Timestamp":         e.now().UnixMilli(),
		"CloudWatchMetrics": []directive{{Namespace: e.namespace, Dimensions: [][]string{keys}, Metrics: defs}},
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
