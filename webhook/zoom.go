package webhook

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Zoom's scheme (https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events,
// https://developers.zoom.us/docs/api/webhooks/#validate-your-webhook-endpoint):
//
//   - x-zm-signature is "v0=" + hex HMAC-SHA256, keyed with the Secret Token,
//     of "v0:" + x-zm-request-timestamp + ":" + raw body. Zoom documents no
//     tolerance; the common five minutes is used.
//   - endpoint.url_validation (when the URL is set, and every 72 hours) is
//     signed like any event. It is answered with {"plainToken": ...,
//     "encryptedToken": hex HMAC-SHA256 of plainToken}, keyed with the
//     secret that verified the request.
//   - Events carry no id: the key is derived from the body without the
//     volatile fields (event_ts, the notification's time, and
//     download_token, a per-notification token). The type is its event.
const (
	zoomSignatureHeader = "X-Zm-Signature"
	zoomTimestampHeader = "X-Zm-Request-Timestamp"
	zoomVersion         = "v0"
	zoomValidation      = "endpoint.url_validation"
)

var zoomSpec = providerSpec{
	tolerance: 5 * time.Minute,
	volatile:  []string{"event_ts", "download_token"},
	build: func(_ Config, tol time.Duration) (providerSetup, error) {
		return providerSetup{
			scheme: zoomScheme{tolerance: tol}, keySrc: keyDerived,
			typeSrc: typeFromBody, typePath: zoomEventPath,
		}, nil
	},
}

// zoomEventPath is where the body names its event.
var zoomEventPath = []string{"event"}

// zoomScheme verifies x-zm-signature.
type zoomScheme struct {
	tolerance time.Duration
}

func zoomMAC(key []byte, ts string, body []byte) []byte {
	return hmacSHA256(key, []byte(zoomVersion+":"+ts+":"), body)
}

// zoomHandshake answers endpoint.url_validation with key, the secret that
// verified the request.
func zoomHandshake(key []byte, doc any) (*Handshake, error) {
	plain := stringAt(doc, []string{"payload", "plainToken"})
	if plain == "" {
		return nil, fmt.Errorf("%s without payload.plainToken: %w", zoomValidation, ErrMalformedBody)
	}
	reply, err := json.Marshal(struct {
		PlainToken     string `json:"plainToken"`
		EncryptedToken string `json:"encryptedToken"`
	}{plain, hexString(hmacSHA256(key, []byte(plain)))})
	if err != nil {
		return nil, fmt.Errorf("encode %s reply: %w", zoomValidation, ErrMalformedBody)
	}
	return &Handshake{Status: http.StatusOK, ContentType: "application/json", Body: reply}, nil
}

func (s zoomScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	value, err := singleValue(req.Header, zoomSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	ts, err := singleValue(req.Header, zoomTimestampHeader)
	if err != nil {
		return meta{}, err
	}
	t, err := parseUnix(ts)
	if err != nil {
		return meta{}, fmt.Errorf("%s: %w", zoomTimestampHeader, err)
	}
	sig, err := parseHexSig(zoomSignatureHeader, zoomVersion+"=", sha256.Size, value, false)
	if err != nil {
		return meta{}, err
	}
	key, err := matchSecret(secrets, rawKey, func(key []byte) [][]byte { return [][]byte{zoomMAC(key, ts, req.Body)} }, [][]byte{sig})
	if err != nil {
		return meta{}, err
	}
	if err := checkTolerance(t, now, s.tolerance); err != nil {
		return meta{}, err
	}
	doc, err := decodeJSON(req.Body)
	if err != nil {
		// Signed, but no key can be derived from a body that is not JSON.
		return meta{}, fmt.Errorf("%w: %w", ErrNoKey, err)
	}
	// The event decides the handshake and the type: one copy only.
	if err := uniqueAt(req.Body, zoomEventPath); err != nil {
		return meta{}, fmt.Errorf("%w: %w", ErrNoKey, err)
	}
	if stringAt(doc, zoomEventPath) == zoomValidation {
		h, err := zoomHandshake(key, doc)
		if err != nil {
			return meta{}, err
		}
		return meta{handshake: h}, nil
	}
	return meta{doc: doc, docJSON: req.Body, hasDoc: true}, nil
}

func (zoomScheme) sign(m Message, secret string) (http.Header, error) {
	ts, err := signTimestamp(m)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(zoomTimestampHeader, ts)
	h.Set(zoomSignatureHeader, zoomVersion+"="+hexString(zoomMAC([]byte(secret), ts, m.Body)))
	h.Set("Content-Type", "application/json; charset=utf-8")
	return h, nil
}
