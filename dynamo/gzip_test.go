package dynamo

import (
	"bytes"
	"crypto/rand"
	"testing"
)

func TestGzipRoundTripAndLimit(t *testing.T) {
	t.Parallel()
	b := bytes.Repeat([]byte(`{"qty":1},`), 1000)
	z := Compress(b)
	if len(z) >= len(b) {
		t.Fatalf("compressed %d to %d", len(b), len(z))
	}
	got, err := Decompress(z, len(b))
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := Decompress(z, len(b)-1); err == nil {
		t.Fatal("limit not enforced")
	}
	if _, err := Decompress([]byte("not gzip"), 10); err == nil {
		t.Fatal("corrupt input accepted")
	}
}

// TestShrink: compressed only from the threshold on, and only when that is
// smaller.
func TestShrink(t *testing.T) {
	t.Parallel()
	json := bytes.Repeat([]byte(`{"qty":1},`), 100)
	random := make([]byte, 1000)
	rand.Read(random)
	for _, tc := range []struct {
		name string
		b    []byte
		from int
		want bool
	}{
		{"compressible, over the threshold", json, 512, true},
		{"compressible, under the threshold", json, len(json) + 1, false},
		{"incompressible", random, 512, false},
	} {
		got, ok := Shrink(tc.b, tc.from)
		if ok != tc.want {
			t.Errorf("%s: compressed %v, want %v", tc.name, ok, tc.want)
			continue
		}
		if !ok && !bytes.Equal(got, tc.b) {
			t.Errorf("%s: not compressed, yet changed", tc.name)
		}
		if ok {
			if back, err := Decompress(got, len(tc.b)); err != nil || !bytes.Equal(back, tc.b) || len(got) >= len(tc.b) {
				t.Errorf("%s: %d bytes to %d, round trip %v", tc.name, len(tc.b), len(got), err)
			}
		}
	}
}
