package bench

import (
	"strings"
	"testing"
)

func TestParseGoBench(t *testing.T) {
	t.Parallel()
	out := `goos: linux
BenchmarkReceiver/stripe/1KB-2   	     200	    900178 ns/op	   1.15 MB/s	 1229712 B/op	     284 allocs/op
BenchmarkReceiver/stripe/1KB-2   	     200	    800000 ns/op	   1.15 MB/s	 1229712 B/op	     284 allocs/op
BenchmarkCreate-2          	     200	      3155 ns/op	    2394 B/op	      34 allocs/op
PASS`
	got := ParseGoBench(strings.NewReader(out))
	if len(got) != 2 || got[0].Name != "BenchmarkReceiver/stripe/1KB" || len(got[0].NsOp) != 2 || got[1].AllocsOp[0] != 34 {
		t.Fatalf("parsed %+v", got)
	}
	if m := Median(got[0].NsOp); m != 800000 {
		t.Fatalf("median %v", m)
	}
}
