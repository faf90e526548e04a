package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"time"
)

// Stripe's scheme, as documented at https://docs.stripe.com/webhooks#verify-manually
// (formerly https://stripe.com/docs/webhooks/signatures):
//
//   - Stripe-Signature holds comma-separated key=value elements: t is the Unix
//     timestamp, each v1 is a signature (several during a secret roll); other
//     schemes such as v0 and unknown keys are discarded, as the docs ask, so a
//     sender cannot be downgraded to a weaker scheme.
//   - The signed payload is t + "." + raw body, signed with HMAC-SHA256 and
//     hex-encoded; the whsec_... signing secret is the key exactly as shown.
//   - Stripe's libraries default to a tolerance of 300 seconds.
const stripeSignatureHeader = "Stripe-Signature"

// stripeFormat is Stripe-Signature: "t=…,v1=…,v1=…"; v0 and unknown keys are ignored.
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

// parseStripeHeader parses Stripe-Signature. It needs exactly one timestamp
// (a second one means the header was repeated and joined) and at least one
// valid v1 signature; v1 entries that are not hex are skipped.
func parseStripeHeader(value string) (stripeHeader, error) {
	ts, timestamp, sigs, err := stripeFormat.parse(value)
	if err != nil {
		return stripeHeader{}, err
	}
	return stripeHeader{t: ts, timestamp: timestamp, v1: sigs}, nil
}

// formatStripeHeader writes a Stripe-Signature value.
func formatStripeHeader(h stripeHeader) string { return stripeFormat.format(h.t, h.v1) }

// stripeMAC computes the v1 signature of body at timestamp ts, as sent.
func stripeMAC(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
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
	if err := checkTolerance(h.timestamp, now, s.tolerance); err != nil {
		return meta{}, err
	}
	return meta{}, nil
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

// rawKey uses a secret's bytes as the HMAC key, as Stripe, GitHub and the
// generic scheme do.
func rawKey(secret string) ([]byte, error) {
	return []byte(secret), nil
}

// matchAny reports nil when any of sigs equals compute(key) for the key of any
// usable secret. Empty secrets and secrets keyOf rejects are skipped; when
// none is usable the result wraps ErrNoSecret. Comparisons are constant-time.
func matchAny(secrets []string, keyOf func(string) ([]byte, error), compute func(key []byte) []byte, sigs ...[]byte) error {
	_, err := matchSecret(secrets, keyOf, func(key []byte) [][]byte { return [][]byte{compute(key)} }, sigs)
	return err
}
