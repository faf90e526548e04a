package bench

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// GoBench is one benchmark's results over its -count runs.
type GoBench struct {
	Name                    string
	NsOp, BytesOp, AllocsOp []float64
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// ParseGoBench reads `go test -bench -benchmem` output and groups the runs
// of each benchmark, in first-seen order.
func ParseGoBench(r io.Reader) []GoBench {
	var order []string
	by := map[string]*GoBench{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		g := by[m[1]]
		if g == nil {
			g = &GoBench{Name: m[1]}
			by[m[1]] = g
			order = append(order, m[1])
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				g.NsOp = append(g.NsOp, v)
			case "B/op":
				g.BytesOp = append(g.BytesOp, v)
			case "allocs/op":
				g.AllocsOp = append(g.AllocsOp, v)
			}
		}
	}
	out := make([]GoBench, 0, len(order))
	for _, n := range order {
		out = append(out, *by[n])
	}
	return out
}
