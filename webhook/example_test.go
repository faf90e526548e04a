package webhook_test

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hookledger/hookledger/webhook"
)

// A receiver builds one Verifier per source at cold start and verifies each
// delivery with the source's current secrets (two while a secret rotates).
func Example() {
	v, err := webhook.New(webhook.Config{Provider: "standard-webhooks"})
	if err != nil {
		panic(err)
	}
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	now := time.Unix(1614265330, 0)
	body := []byte(`{"type":"invoice.paid","data":{"id":"in_1"}}`)

	// What the sender does.
	header, err := v.Sign(webhook.Message{ID: "msg_1", Body: body, Now: now}, secret)
	if err != nil {
		panic(err)
	}

	// What the receiver does.
	req := &webhook.Request{Method: http.MethodPost, URL: "https://hooks.example.com/acme", Header: header, Body: body}
	ev, err := v.Verify(req, []string{"whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZA==", secret}, now.Add(time.Minute))
	if err != nil {
		panic(err)
	}
	fmt.Println(ev.ID, ev.Type, ev.Derived)

	// A tampered body is refused; the caller maps the error to 401.
	req.Body = []byte(`{"type":"invoice.paid","data":{"id":"in_2"}}`)
	_, err = v.Verify(req, []string{secret}, now)
	fmt.Println(errors.Is(err, webhook.ErrBadSignature))
	// Output:
	// msg_1 invoice.paid false
	// true
}

// A source without event ids gets a key derived from its body, with the
// fields that change between retries removed first.
func ExampleVerifier_Verify_derivedKey() {
	v, err := webhook.New(webhook.Config{
		Provider:       "generic",
		Generic:        &webhook.GenericConfig{Prefix: "sha256=", SignatureHeader: "X-Acme-Signature"},
		TypePath:       "event",
		VolatileFields: []string{"sent_at"},
	})
	if err != nil {
		panic(err)
	}
	now := time.Unix(1700000000, 0)
	for _, body := range []string{
		`{"event":"order.paid","order":"ord_42","sent_at":"10:00:00"}`,
		`{"sent_at":"10:05:00", "order":"ord_42", "event":"order.paid"}`, // the retry
	} {
		header, err := v.Sign(webhook.Message{Body: []byte(body), Now: now}, "acme-secret")
		if err != nil {
			panic(err)
		}
		ev, err := v.Verify(&webhook.Request{Header: header, Body: []byte(body)}, []string{"acme-secret"}, now)
		if err != nil {
			panic(err)
		}
		fmt.Println(ev.ID[:24], ev.Type, ev.Derived)
	}
	// Output:
	// derived:88223a1465776561 order.paid true
	// derived:88223a1465776561 order.paid true
}

// A handshake (here Zoom's endpoint.url_validation) is authenticated like any
// delivery and answered as is; it has no key and never reaches the ledger.
func ExampleVerifier_Verify_handshake() {
	v, err := webhook.New(webhook.Config{Provider: "zoom"})
	if err != nil {
		panic(err)
	}
	const secret = "zoom_secret_token"
	now := time.Unix(1700000000, 0)
	body := []byte(`{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`)
	header, err := v.Sign(webhook.Message{Body: body, Now: now}, secret)
	if err != nil {
		panic(err)
	}
	ev, err := v.Verify(&webhook.Request{Header: header, Body: body}, []string{secret}, now)
	if err != nil {
		panic(err)
	}
	fmt.Printf("key %q, reply %d %s\n%s\n", ev.ID, ev.Handshake.Status, ev.Handshake.ContentType, ev.Handshake.Body)
	// Output:
	// key "", reply 200 application/json
	// {"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"bd48235863f4a6323ccc4963c594908b7c97f88b4a6a95278f4f093690b12726"}
}
