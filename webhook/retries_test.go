package webhook

import (
	"net/http"
	"testing"
	"time"
)

// Twilio signs a JSON body through the URL: it appends bodySHA256 to the
// URL as configured in Twilio and signs that. With Config.URL set (the
// receiver sits behind a proxy or custom domain), the bodySHA256 that
// arrived on the request must be carried over to Config.URL.
// Vector: body and hash from twilio-python's request validator tests; the
// signature computed with Python's hmac over the URL below.
func TestTwilioJSONBodyWithConfiguredURL(t *testing.T) {
	t.Parallel()
	const (
		configured = "https://hooks.example.com/webhooks/twilio/acme"
		bodyHash   = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
		body       = `{"property": "value", "boolean": true}`
	)
	v, err := New(Config{Provider: "twilio", URL: configured})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{
		URL:    "https://abc123.execute-api.us-east-1.amazonaws.com/webhooks/twilio/acme?bodySHA256=" + bodyHash,
		Header: http.Header{"X-Twilio-Signature": {"4h8lgN7/Vxv2Jl76CR4uHZ23F9U="}, "I-Twilio-Idempotency-Token": {"idem-1"}},
		Body:   []byte(body),
	}
	ev, err := v.Verify(req, []string{"twilioAuthToken"}, time.Now())
	if err != nil {
		t.Fatalf("JSON delivery signed over the configured URL: %v", err)
	}
	if ev.ID != "idem-1" {
		t.Fatalf("key %q", ev.ID)
	}
	// A different body under the same URL hash is refused.
	req.Body = []byte(`{"property": "other", "boolean": true}`)
	if _, err := v.Verify(req, []string{"twilioAuthToken"}, time.Now()); err == nil {
		t.Fatal("a body that does not hash to bodySHA256 verified")
	}
	// Signing a JSON message through the configured URL works too (the
	// sender posts to a URL carrying bodySHA256).
	h, err := v.Sign(Message{ID: "idem-2", URL: "https://elsewhere.example/x?bodySHA256=" + bodyHash, Body: []byte(body)}, "twilioAuthToken")
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	if got := h.Get("X-Twilio-Signature"); got != "4h8lgN7/Vxv2Jl76CR4uHZ23F9U=" {
		t.Fatalf("signature %q, want the configured URL's", got)
	}
}

// GitLab's X-Gitlab-Event-UUID is shared by recursive webhooks, so without
// Idempotency-Key the key comes from the body: two events with one UUID get
// two keys, and the same body again gets the same key.
func TestGitLabWithoutIdempotencyKeyDerivesFromTheBody(t *testing.T) {
	t.Parallel()
	v, err := New(Config{Provider: "gitlab"})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(typ, body string) Event {
		t.Helper()
		ev, err := v.Verify(&Request{Header: http.Header{
			"X-Gitlab-Token": {"tok"}, "X-Gitlab-Event": {typ},
			"X-Gitlab-Event-Uuid": {"13792a34-cac6-4fda-95a8-c58e00a3954e"},
		}, Body: []byte(body)}, []string{"tok"}, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		return ev
	}
	mr := verify("Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"id":1}}`)
	note := verify("Note Hook", `{"object_kind":"note","object_attributes":{"id":2}}`)
	again := verify("Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"id":1}}`)
	if !mr.Derived || mr.ID == note.ID {
		t.Fatalf("keys %q (derived %v) and %q: two events sharing a UUID must not share a key", mr.ID, mr.Derived, note.ID)
	}
	if again.ID != mr.ID {
		t.Fatalf("the same body keyed %q then %q", mr.ID, again.ID)
	}
	// Idempotency-Key still wins when present.
	ev, err := v.Verify(&Request{Header: http.Header{
		"X-Gitlab-Token": {"tok"}, "X-Gitlab-Event": {"Push Hook"}, "Idempotency-Key": {"ik-1"},
	}, Body: []byte(`{}`)}, []string{"tok"}, time.Now())
	if err != nil || ev.ID != "ik-1" || ev.Derived {
		t.Fatalf("with Idempotency-Key: %+v, %v", ev, err)
	}
}

// A retry that changes only the provider's delivery bookkeeping is the same
// body: Linear renews webhookTimestamp (it must, to pass the one-minute
// window), Intercom counts delivery_attempts.
func TestRetryBookkeepingIsNotABodyChange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ provider, first, retry, changed string }{
		{"linear",
			`{"action":"create","type":"Issue","data":{"id":"i1"},"webhookTimestamp":1700000000000}`,
			`{"action":"create","type":"Issue","data":{"id":"i1"},"webhookTimestamp":1700000060000}`,
			`{"action":"create","type":"Issue","data":{"id":"i2"},"webhookTimestamp":1700000060000}`},
		{"intercom",
			`{"type":"notification_event","id":"n1","topic":"contact.created","data":{"item":{"id":"c1"}},"delivery_status":"pending","delivery_attempts":1,"first_sent_at":1700000000,"delivered_at":0}`,
			`{"type":"notification_event","id":"n1","topic":"contact.created","data":{"item":{"id":"c1"}},"delivery_status":"retry","delivery_attempts":2,"first_sent_at":1700000000,"delivered_at":0}`,
			`{"type":"notification_event","id":"n1","topic":"contact.created","data":{"item":{"id":"c2"}},"delivery_status":"retry","delivery_attempts":2,"first_sent_at":1700000000,"delivered_at":0}`},
	} {
		v, err := New(Config{Provider: tc.provider})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := v.BodyDigest([]byte(tc.first)), v.BodyDigest([]byte(tc.retry)); a != b {
			t.Errorf("%s: a retry digests differently (%.12s, %.12s)", tc.provider, a, b)
		}
		if a, c := v.BodyDigest([]byte(tc.first)), v.BodyDigest([]byte(tc.changed)); a == c {
			t.Errorf("%s: a changed event digests the same", tc.provider)
		}
	}
}

// Twilio signs a form's fields, sorted and concatenated, not its bytes:
// bytes that re-encode the same fields are the same delivery for the body
// digest (and so for the replay guard), and for a derived key.
func TestTwilioReencodedFormIsTheSameBody(t *testing.T) {
	t.Parallel()
	const u = "https://hooks.example.com/webhooks/twilio/acme"
	v, err := New(Config{Provider: "twilio"})
	if err != nil {
		t.Fatal(err)
	}
	original := "AccountSid=AC1&Body=pay+100&From=%2B15550001&MessageSid=SM1"
	same := []string{
		"MessageSid=SM1&From=%2B15550001&Body=pay%20100&AccountSid=AC1", // reordered, %20
		"AccountSid=AC1&Body=pay+100&From=%2B15550001&MessageSid=SM1&",  // trailing &
		"AccountSid=AC1&Body=pay+100&From=%2B15550001&MessageSid=SM1&MessageSid=SM1",
		"AccountSid=AC1Bodypay+100&From=%2B15550001&MessageSid=SM1", // fields re-split: the signature cannot tell
	}
	want := v.BodyDigest([]byte(original))
	for _, b := range same {
		if got := v.BodyDigest([]byte(b)); got != want {
			t.Errorf("%q digests apart from %q", b, original)
		}
	}
	if v.BodyDigest([]byte("AccountSid=AC1&Body=pay+101&From=%2B15550001&MessageSid=SM1")) == want {
		t.Error("a changed field digests the same")
	}
	json := []byte(`{"a":1}`)
	if v.BodyDigest(json) != v.BodyDigest([]byte(`{"a":1}`)) || v.BodyDigest(json) == v.BodyDigest([]byte(`{"a": 1}`)) {
		t.Error("a JSON body (signed through bodySHA256, its exact bytes) must digest its bytes")
	}
	// Without an idempotency token the key is derived from the fields as
	// signed: a field repeated in transit is the same event.
	h, err := v.Sign(Message{URL: u, Body: []byte(original)}, "tok")
	if err != nil {
		t.Fatal(err)
	}
	key := func(body string) string {
		t.Helper()
		ev, err := v.Verify(&Request{URL: u, Header: h, Body: []byte(body)}, []string{"tok"}, time.Now())
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		return ev.ID
	}
	if a, b := key(original), key(same[2]); a != b {
		t.Errorf("a repeated field derived a new key: %q vs %q", a, b)
	}
}
