package zip

import (
	"bytes"
	"testing"
)

func TestRoundTripAndLimit(t *testing.T) {
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
