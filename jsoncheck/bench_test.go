package jsoncheck

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDuplicate checks a 100 KiB webhook-like body: along two
// top-level paths (a key and a type) and everywhere (a derived key).
func BenchmarkDuplicate(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"id":"evt_bench_0001","type":"invoice.paid","data":{"items":[`)
	for i := 0; sb.Len() < 100*1024; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"li_%d","amount":%d,"currency":"usd","description":"line item \u00e9 %d","metadata":{"k":"v","n":null,"ok":true}}`, i, i*100, i)
	}
	sb.WriteString(`]}}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for _, tc := range []struct {
		name  string
		paths [][]string
	}{
		{"paths", [][]string{{"id"}, {"type"}}},
		{"everywhere", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Duplicate(body, tc.paths...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
