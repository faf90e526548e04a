package queue

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
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
	random := make([]byte, MaxMessageBytes) // incompressible: too large even gzip'd
	rand.Read(random)
	s, err := Encode(Message{Source: "s", Tenant: "t", Key: "k", SHA256: "ab", Body: random})
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

func TestLargeCompressibleBodyRidesCompressed(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte(`{"line":"item","qty":1,"price":4900},`), 20000) // 740 KB of JSON
	s, err := Encode(Message{Source: "s", Tenant: "t", Key: "k", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if len(s) > MaxMessageBytes || !strings.Contains(s, `"body_gz"`) || strings.Contains(s, `"body":`) {
		t.Fatalf("message of %d bytes does not carry the body compressed", len(s))
	}
	m, err := Decode(s)
	if err != nil || !bytes.Equal(m.Body, body) || m.BodyGzip != nil {
		t.Fatalf("round trip: %d bytes back, %v", len(m.Body), err)
	}
}

func TestSmallBodyStaysPlain(t *testing.T) {
	t.Parallel()
	s, _ := Encode(Message{Source: "s", Tenant: "t", Key: "k", Body: []byte(`{"id":"evt_1"}`)})
	if strings.Contains(s, "body_gz") {
		t.Fatalf("a small body was compressed: %s", s)
	}
}

func TestCorruptCompressedBodyIsMalformed(t *testing.T) {
	t.Parallel()
	if _, err := Decode(`{"v":1,"source":"s","tenant":"t","key":"k","body_gz":"AAAA"}`); !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v", err)
	}
}

// Bodies past SQS's former 256 KiB limit ride in the message now: the
// processor needs no ledger read for them.
func TestBodyPastTheOld256KiBLimitRides(t *testing.T) {
	t.Parallel()
	random := make([]byte, 600<<10) // incompressible: 800 KB once base64'd in JSON
	rand.Read(random)
	s, err := Encode(Message{Source: "s", Tenant: "t", Key: "k", SHA256: "ab", Body: random})
	if err != nil {
		t.Fatal(err)
	}
	if len(s) <= 256<<10 || len(s) > MaxMessageBytes {
		t.Fatalf("message is %d bytes, want between 256 KiB and 1 MiB", len(s))
	}
	m, err := Decode(s)
	if err != nil || !bytes.Equal(m.Body, random) {
		t.Fatalf("round trip: %d bytes back, %v", len(m.Body), err)
	}
}

func TestRefSurvivesWhenTheBodyLeaves(t *testing.T) {
	t.Parallel()
	random := make([]byte, 2<<20)
	rand.Read(random)
	s, err := Encode(Message{Source: "s", Tenant: "t", Key: "k", SHA256: "ab", Body: random, Ref: "payloads/abc"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(s)
	if err != nil || m.Body != nil || m.Ref != "payloads/abc" {
		t.Fatalf("%d body bytes, ref %q, %v; want no body and the reference", len(m.Body), m.Ref, err)
	}
}
