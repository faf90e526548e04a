package webhook

import (
	"net/http"
	"time"
)

// Stripe's scheme (https://docs.stripe.com/webhooks#verify-manually):
//
//   - Stripe-Signature holds comma-separated key=value elements: t is the Unix
//     timestamp, each v1 a signature (several during a secret roll). v0 and
//     unknown keys are discarded, as the docs ask, so no downgrade is possible.
//   - The signed payload is t + "." + raw body, HMAC-SHA256, hex-encoded; the
//     whsec_... signing secret is the key exactly as shown.
//   - Stripe's libraries default to a tolerance of 300 seconds.
const stripeSignatureHeader = "Stripe-Signature"

// stripeSpec takes the key from the body's "id" and the type from its "type".
var stripeSpec = providerSpec{tolerance: defaultTolerance, build: func(_ Config, tol time.Duration) (providerSetup, error) {
	return providerSetup{scheme: stripeScheme{tolerance: tol}, keySrc: keyFromBody, keyPath: []string{"id"}, typeSrc: typeFromBody, typePath: []string{"type"}}, nil
}}

// stripeFormat is Stripe-Signature: "t=…,v1=…,v1=…".
var stripeFormat = keyedHeader{name: stripeSignatureHeader, sep: ",", tsKey: "t", sigKey: "v1"}

// stripeScheme verifies Stripe-Signature.
type stripeScheme struct {
	tolerance time.Duration
}

// stripeHeader is a parsed Stripe-Signature header.
type stripeHeader struct {
	t         string // the timestamp as sent, which is what was signed
	timestamp int64
	v1        [][]byte
}

// parseStripeHeader needs exactly one timestamp (a second means a repeated,
// joined header) and at least one valid v1; v1 entries not in hex are skipped.
func parseStripeHeader(value string) (stripeHeader, error) {
	ts, timestamp, sigs, err := stripeFormat.parse(value)
	if err != nil {
		return stripeHeader{}, err
	}
	return stripeHeader{t: ts, timestamp: timestamp, v1: sigs}, nil
}

func formatStripeHeader(h stripeHeader) string { return stripeFormat.format(h.t, h.v1) }

// stripeMAC computes the v1 signature of body at timestamp ts, as sent.
func stripeMAC(secret []byte, ts string, body []byte) []byte {
	return hmacSHA256(secret, []byte(ts+"."), body)
}

func (s stripeScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	value, err := listValue(req.Header, stripeSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	h, err := parseStripeHeader(value)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return stripeMAC(key, h.t, req.Body) }, h.v1...); err != nil {
		return meta{}, err
	}
	return meta{}, checkTolerance(h.timestamp, now, s.tolerance)
}

func (s stripeScheme) sign(m Message, secret string) (http.Header, error) {
	ts, err := signTimestamp(m)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(stripeSignatureHeader, formatStripeHeader(stripeHeader{t: ts, v1: [][]byte{stripeMAC([]byte(secret), ts, m.Body)}}))
	h.Set("Content-Type", "application/json; charset=utf-8")
	return h, nil
}
