package webhook

import (
	"crypto/sha256"
	"net/http"
	"time"
)

// Paddle Billing's scheme (https://developer.paddle.com/webhooks/signature-verification):
//
//   - Paddle-Signature holds semicolon-separated key=value elements: ts is
//     the Unix timestamp, each h1 a signature (several while a secret
//     rotates); unknown keys are ignored.
//   - The signed payload is ts + ":" + raw body, hex HMAC-SHA256; the secret
//     key (pdl_ntfset_...) is used as shown, prefix included.
//   - Paddle's SDKs and docs reject a ts more than five seconds off: the
//     default tolerance (set Config.Tolerance when clocks drift more).
//   - The body's event_id survives retries; the type is event_type.
//
// Paddle Classic (p_signature in a form body, RSA) is not supported.
const paddleSignatureHeader = "Paddle-Signature"

// paddleFormat is Paddle-Signature: "ts=…;h1=…;h1=…"; h1 is a 32-byte HMAC-SHA256.
var paddleFormat = keyedHeader{name: paddleSignatureHeader, sep: ";", tsKey: "ts", sigKey: "h1", sigLen: sha256.Size}

var paddleSpec = providerSpec{
	tolerance: 5 * time.Second,
	build: func(_ Config, tol time.Duration) (providerSetup, error) {
		return providerSetup{
			scheme: paddleScheme{tolerance: tol},
			keySrc: keyFromBody, keyPath: []string{"event_id"},
			typeSrc: typeFromBody, typePath: []string{"event_type"},
		}, nil
	},
}

// paddleScheme verifies Paddle-Signature.
type paddleScheme struct {
	tolerance time.Duration
}

// paddleHeader is a parsed Paddle-Signature header.
type paddleHeader struct {
	ts        string // as sent, which is what was signed
	timestamp int64
	h1        [][]byte
}

// parsePaddleHeader parses Paddle-Signature. It needs exactly one ts and at
// least one h1 of 32 bytes in hex; other h1 entries are skipped.
func parsePaddleHeader(value string) (paddleHeader, error) {
	ts, timestamp, sigs, err := paddleFormat.parse(value)
	if err != nil {
		return paddleHeader{}, err
	}
	return paddleHeader{ts: ts, timestamp: timestamp, h1: sigs}, nil
}

// formatPaddleHeader writes a Paddle-Signature value.
func formatPaddleHeader(h paddleHeader) string { return paddleFormat.format(h.ts, h.h1) }

func paddleMAC(key []byte, ts string, body []byte) []byte {
	return hmacSHA256(key, []byte(ts+":"), body)
}

func (s paddleScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	// Paddle's value ("ts=…;h1=…") never holds a comma: one is a repetition.
	value, err := singleValue(req.Header, paddleSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	h, err := parsePaddleHeader(value)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return paddleMAC(key, h.ts, req.Body) }, h.h1...); err != nil {
		return meta{}, err
	}
	if err := checkTolerance(h.timestamp, now, s.tolerance); err != nil {
		return meta{}, err
	}
	return meta{}, nil
}

func (paddleScheme) sign(m Message, secret string) (http.Header, error) {
	ts, err := signTimestamp(m)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(paddleSignatureHeader, formatPaddleHeader(paddleHeader{ts: ts, h1: [][]byte{paddleMAC([]byte(secret), ts, m.Body)}}))
	h.Set("Content-Type", "application/json")
	return h, nil
}
