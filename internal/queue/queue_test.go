package queue

import (
	"bytes"
	"errors"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	m := Message{Source: "stripe", Tenant: "acme", Key: "evt_1", Type: "invoice.paid", SHA256: "ab", Body: []byte{0, 1, 0xff, '"'}, ReceivedAt: 42}
	s, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(s)
	m.V = 1
	if err != nil || got.Key != m.Key || !bytes.Equal(got.Body, m.Body) || got.ReceivedAt != 42 || got.V != 1 {
		t.Fatalf("round trip %+v %v", got, err)
	}
}

func TestLargeBodyLeavesTheMessage(t *testing.T) {
	t.Parallel()
	s, err := Encode(Message{Source: "s", Tenant: "t", Key: "k", SHA256: "ab", Body: bytes.Repeat([]byte("x"), MaxMessageBytes)})
	if err != nil {
		t.Fatal(err)
	}
	if len(s) > MaxMessageBytes {
		t.Fatalf("message is %d bytes", len(s))
	}
	m, err := Decode(s)
	if err != nil || m.Body != nil || m.SHA256 != "ab" {
		t.Fatalf("%+v %v", m, err)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	t.Parallel()
	for _, s := range []string{``, `{`, `{"v":2,"source":"s","tenant":"t","key":"k"}`, `{"v":1,"source":"s","tenant":"t"}`, `[]`} {
		if _, err := Decode(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%q) = %v, want ErrMalformed", s, err)
		}
	}
}
