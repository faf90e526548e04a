package queue

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	m := Message{Source: "stripe", Tenant: "acme", ID: "evt_1", Type: "invoice.paid", SHA256: "ab", Body: []byte{0, 1, 0xff, '"'}, ReceivedAt: 42}
	s, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(s)
	m.V = 1
	if err != nil || got.ID != m.ID || !bytes.Equal(got.Body, m.Body) || got.ReceivedAt != 42 || got.V != 1 {
		t.Fatalf("round trip %+v %v", got, err)
	}
}

func TestLargeBodyLeavesTheMessage(t *testing.T) {
	t.Parallel()
	random := make([]byte, MaxMessageBytes) // incompressible: too large even gzip'd
	rand.Read(random)
	s, err := Encode(Message{Source: "s", Tenant: "t", ID: "k", SHA256: "ab", Body: random})
	if err != nil {
		t.Fatal(err)
	}
	if len(s) > MaxMessageBytes {
		t.Fatalf("message is %d bytes", len(s))
	}
	m, err := Decode(s)
	if err != nil || m.Body != nil || !m.BodyOmitted || m.SHA256 != "ab" {
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
	s, err := Encode(Message{Source: "s", Tenant: "t", ID: "k", Body: body})
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
	s, _ := Encode(Message{Source: "s", Tenant: "t", ID: "k", Body: []byte(`{"id":"evt_1"}`)})
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
	s, err := Encode(Message{Source: "s", Tenant: "t", ID: "k", SHA256: "ab", Body: random})
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
	s, err := Encode(Message{Source: "s", Tenant: "t", ID: "k", SHA256: "ab", Body: random, Ref: "payloads/abc"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(s)
	if err != nil || m.Body != nil || !m.BodyOmitted || m.Ref != "payloads/abc" {
		t.Fatalf("%d body bytes, ref %q, %v; want no body and the reference", len(m.Body), m.Ref, err)
	}
}

// An accepted empty body (GitHub, Standard Webhooks and generic sources
// with an id header accept one) rides in the message as an empty body. The
// previous encoding dropped it (omitempty), and the processor took the
// missing body for one left out for size and read the ledger's payload,
// which under HOOKLEDGER_PAYLOAD=on-trouble does not exist.
func TestEmptyBodyIsCarried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body []byte
	}{{"empty", []byte{}}, {"nil", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Encode(Message{Source: "github", Tenant: "acme", ID: "d-1", SHA256: EmptyBodySHA256, Body: tc.body})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(s, `"body":""`) || strings.Contains(s, "body_omitted") {
				t.Errorf("encoded %s, want the empty body written out and no marker", s)
			}
			m, err := Decode(s)
			if err != nil || m.Body == nil || len(m.Body) != 0 || m.BodyOmitted {
				t.Fatalf("decoded body %v (nil %v), omitted %v, %v; want an empty, carried body", m.Body, m.Body == nil, m.BodyOmitted, err)
			}
		})
	}
	// A marker set by the sender leaves the body out even when it is empty.
	s, _ := Encode(Message{Source: "s", Tenant: "t", ID: "k", SHA256: "ab", BodyOmitted: true})
	if m, err := Decode(s); err != nil || m.Body != nil || !m.BodyOmitted {
		t.Errorf("explicitly omitted: %+v %v", m, err)
	}
	// A reference without a body: the body is in the payload store.
	s, _ = Encode(Message{Source: "s", Tenant: "t", ID: "k", SHA256: "ab", Ref: "payloads/abc"})
	if m, err := Decode(s); err != nil || m.Body != nil || !m.BodyOmitted || !strings.Contains(s, `"body_omitted":true`) {
		t.Errorf("reference without a body: %s -> %+v %v", s, m, err)
	}
}

// Messages written by the previous version (no body_omitted marker, empty
// bodies and bodies left out both without "body") keep their meaning where
// the message tells it: a Ref or a digest other than the empty body's
// means the body was left out; otherwise the body is empty. And the new
// encoding of an empty body reads as an empty body under the previous
// decoder's rules as well (a non-nil, empty []byte).
func TestMessagesOfThePreviousVersionDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, msg string
		omitted   bool
	}{
		{"left out for size", `{"v":1,"source":"s","tenant":"t","key":"k","sha256":"ab"}`, true},
		{"left out, body in the payload store", `{"v":1,"source":"s","tenant":"t","key":"k","sha256":"` + EmptyBodySHA256 + `","ref":"payloads/abc"}`, true},
		{"empty body", `{"v":1,"source":"s","tenant":"t","key":"k","sha256":"` + EmptyBodySHA256 + `"}`, false},
		{"empty body, no digest", `{"v":1,"source":"s","tenant":"t","key":"k"}`, false},
		{"carried", `{"v":1,"source":"s","tenant":"t","key":"k","sha256":"ab","body":"eyJpZCI6MX0="}`, false},
	} {
		m, err := Decode(tc.msg)
		if err != nil || m.BodyOmitted != tc.omitted || tc.omitted != (m.Body == nil) {
			t.Errorf("%s: omitted %v, body %q (nil %v), %v; want omitted %v", tc.name, m.BodyOmitted, m.Body, m.Body == nil, err, tc.omitted)
		}
	}
	var old struct {
		Body []byte `json:"body,omitempty"`
	}
	s, _ := Encode(Message{Source: "s", Tenant: "t", ID: "k", SHA256: EmptyBodySHA256, Body: []byte{}})
	if err := json.Unmarshal([]byte(s), &old); err != nil || old.Body == nil || len(old.Body) != 0 {
		t.Errorf("the previous decoder reads %q as %v (nil %v), %v; want an empty body it runs as such", s, old.Body, old.Body == nil, err)
	}
}
