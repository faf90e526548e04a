package webhook

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Square's scheme (https://developer.squareup.com/docs/webhooks/step3validate,
// and square-python-sdk webhooks_helper):
//
//   - x-square-hmacsha256-signature is the base64 HMAC-SHA256, keyed with the
//     signature key, of the notification URL as configured, then the raw
//     body. No timestamp. The legacy x-square-signature (SHA-1) is ignored.
//   - The body's event_id is what Square says to deduplicate on
//     (https://developer.squareup.com/docs/webhooks); the type is its type.
//
// The URL is Config.URL when set, else Request.URL; Sign uses Config.URL or
// Message.URL.
const squareSignatureHeader = "X-Square-Hmacsha256-Signature"

var squareSpec = providerSpec{
	build: func(cfg Config, _ time.Duration) (providerSetup, error) {
		return providerSetup{
			scheme: squareScheme{url: cfg.URL},
			keySrc: keyFromBody, keyPath: []string{"event_id"},
			typeSrc: typeFromBody, typePath: []string{"type"},
		}, nil
	},
}

// squareScheme verifies x-square-hmacsha256-signature.
type squareScheme struct {
	url string // Config.URL
}

func squareMAC(key []byte, notificationURL string, body []byte) []byte {
	return hmacSHA256(key, []byte(notificationURL), body)
}

// errNoURL is the error of URL-signing schemes that know no URL.
func errNoURL(provider string) error {
	return fmt.Errorf("%s signs the notification URL, and neither the request nor the config (url) has one: %w", provider, ErrMissingHeader)
}

func (s squareScheme) authenticate(req *Request, secrets []string, _ time.Time) (meta, error) {
	value, err := singleValue(req.Header, squareSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	sig, err := parseBase64Sig(squareSignatureHeader, sha256.Size, value)
	if err != nil {
		return meta{}, err
	}
	u := cmp.Or(s.url, req.URL)
	if u == "" {
		return meta{}, errNoURL(providerSquare)
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return squareMAC(key, u, req.Body) }, sig); err != nil {
		return meta{}, err
	}
	return meta{}, nil
}

func (s squareScheme) sign(m Message, secret string) (http.Header, error) {
	u := cmp.Or(s.url, m.URL)
	if u == "" {
		return nil, errors.New("message needs the notification URL (URL)")
	}
	h := http.Header{}
	h.Set(squareSignatureHeader, base64.StdEncoding.EncodeToString(squareMAC([]byte(secret), u, m.Body)))
	h.Set("Content-Type", "application/json")
	return h, nil
}
