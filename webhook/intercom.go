package webhook

import (
	"crypto/sha1"
	"fmt"
	"net/http"
	"time"
)

// Intercom's scheme (https://developers.intercom.com/docs/webhooks/setting-up-webhooks,
// https://developers.intercom.com/docs/references/webhooks/webhook-models):
//
//   - X-Hub-Signature is "sha1=" + hex HMAC-SHA1 of the raw body, keyed with
//     the client_secret. No timestamp.
//   - A notification's id (notif_...) is the key; its topic is the type.
//   - The "ping" topic (a webhook set up or tested) is a handshake: 200, not
//     recorded.
const (
	intercomSignatureHeader = "X-Hub-Signature"
	intercomPrefix          = "sha1="
	intercomPing            = "ping"
)

var intercomSpec = providerSpec{
	// The notification's delivery bookkeeping changes from one attempt to
	// the next (webhook model: delivery_status, delivery_attempts,
	// delivered_at, first_sent_at), so it is left out of the body's digest.
	volatile: []string{"delivery_status", "delivery_attempts", "delivered_at", "first_sent_at"},
	build: func(Config, time.Duration) (providerSetup, error) {
		return providerSetup{
			scheme: intercomScheme{},
			keySrc: keyFromBody, keyPath: []string{"id"},
			typeSrc: typeFromBody, typePath: intercomTopicPath,
		}, nil
	},
}

// intercomTopicPath is where a notification names its topic.
var intercomTopicPath = []string{"topic"}

// intercomScheme verifies X-Hub-Signature.
type intercomScheme struct{}

func (intercomScheme) authenticate(req *Request, secrets []string, _ time.Time) (meta, error) {
	value, err := singleValue(req.Header, intercomSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	sig, err := parseHexSig(intercomSignatureHeader, intercomPrefix, sha1.Size, value, false)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return hmacOf(sha1.New, key, req.Body) }, sig); err != nil {
		return meta{}, err
	}
	if doc, err := decodeJSON(req.Body); err == nil && stringAt(doc, intercomTopicPath) == intercomPing {
		// The topic decides the handshake: one copy only.
		if err := uniqueAt(req.Body, intercomTopicPath); err != nil {
			return meta{}, fmt.Errorf("%w: %w", ErrNoKey, err)
		}
		return meta{handshake: &Handshake{Status: http.StatusOK, ContentType: "text/plain", Body: []byte("ok")}}, nil
	}
	return meta{}, nil
}

func (intercomScheme) sign(m Message, secret string) (http.Header, error) {
	h := http.Header{}
	h.Set(intercomSignatureHeader, intercomPrefix+hexString(hmacOf(sha1.New, []byte(secret), m.Body)))
	h.Set("Content-Type", "application/json")
	return h, nil
}
