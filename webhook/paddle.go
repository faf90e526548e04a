package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Paddle Billing's scheme, as documented at
// https://developer.paddle.com/webhooks/signature-verification:
//
//   - Paddle-Signature holds semicolon-separated key=value elements: ts is
//     the Unix timestamp, each h1 is a signature (several while a secret
//     rotates); unknown keys are ignored.
//   - The signed payload is ts + ":" + raw body, signed with HMAC-SHA256 and
//     hex-encoded; the endpoint secret key (pdl_ntfset_...) is used exactly as
//     shown, prefix included.
//   - Paddle's SDKs reject a ts more than five seconds away from now, and the
//     docs ask manual implementations to do the same; that is the default
//     tolerance here (set Config.Tolerance when clocks drift more).
//   - The body's event_id identifies the event across retries; the type is
//     event_type.
//
// Paddle Classic (p_signature in a form body, RSA) is not supported.
const paddleSignatureHeader = "Paddle-Signature"

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

// parsePaddleHeader parses every value of Paddle-Signature. It needs exactly
// one ts (repeated only with the same value) and at least one h1 of 32 bytes
// in hex; other h1 entries are skipped.
func parsePaddleHeader(values []string) (paddleHeader, error) {
	var h paddleHeader
	var ts string
	for _, value := range values {
		for elem := range strings.SplitSeq(value, ";") {
			elem = strings.TrimSpace(elem)
			if elem == "" {
				continue
			}
			k, val, ok := strings.Cut(elem, "=")
			if !ok {
				return paddleHeader{}, fmt.Errorf("%s: element %q is not key=value: %w", paddleSignatureHeader, clip(elem), ErrMalformedHeader)
			}
			switch k {
			case "ts":
				if ts != "" && ts != val {
					return paddleHeader{}, fmt.Errorf("%s: several timestamps: %w", paddleSignatureHeader, ErrMalformedHeader)
				}
				ts = val
			case "h1":
				sig, err := hex.DecodeString(val)
				if err != nil || len(sig) != sha256.Size {
					continue
				}
				h.h1 = append(h.h1, sig)
			}
		}
	}
	if ts == "" {
		return paddleHeader{}, fmt.Errorf("%s: no ts: %w", paddleSignatureHeader, ErrMalformedHeader)
	}
	t, err := parseUnix(ts)
	if err != nil {
		return paddleHeader{}, fmt.Errorf("%s: %w", paddleSignatureHeader, err)
	}
	h.ts, h.timestamp = ts, t
	if len(h.h1) == 0 {
		return paddleHeader{}, fmt.Errorf("%s: no h1 signature: %w", paddleSignatureHeader, ErrMalformedHeader)
	}
	return h, nil
}

// formatPaddleHeader writes a Paddle-Signature value.
func formatPaddleHeader(h paddleHeader) string {
	var b strings.Builder
	b.WriteString("ts=")
	b.WriteString(h.ts)
	for _, s := range h.h1 {
		b.WriteString(";h1=")
		b.WriteString(hex.EncodeToString(s))
	}
	return b.String()
}

func paddleMAC(key []byte, ts string, body []byte) []byte {
	return hmacSHA256(key, []byte(ts+":"), body)
}

func (s paddleScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	values := headerValues(req.Header, paddleSignatureHeader)
	if len(values) == 0 {
		return meta{}, fmt.Errorf("%s: %w", paddleSignatureHeader, ErrMissingHeader)
	}
	h, err := parsePaddleHeader(values)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return paddleMAC(key, h.ts, req.Body) }, h.h1); err != nil {
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
