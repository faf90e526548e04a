package metric

import "sort"

// AddAll writes one line adding each count to its metric, zeros included:
// for a periodic job (the reconciler), a zero is data, so an alarm on the
// metric sees a healthy period rather than a gap.
func (e *Emitter) AddAll(counts map[string]int) {
	if e == nil || len(counts) == 0 {
		return
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	e.write(names, counts)
}
