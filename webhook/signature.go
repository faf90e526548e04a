package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"strings"
	"time"
)

// matchSecret returns the key of the first usable secret for which one of
// compute(key) equals one of sigs (Twilio computes several: its URL with and
// without port). Secrets that are empty or keyOf rejects are skipped; none
// usable is ErrNoSecret, a mismatch ErrBadSignature. Comparisons are
// constant-time.
func matchSecret(secrets []string, keyOf func(string) ([]byte, error), compute func(key []byte) [][]byte, sigs [][]byte) ([]byte, error) {
	usable := 0
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		key, err := keyOf(secret)
		if err != nil || len(key) == 0 {
			continue
		}
		usable++
		for _, want := range compute(key) {
			for _, sig := range sigs {
				if hmac.Equal(want, sig) {
					return key, nil
				}
			}
		}
	}
	if usable == 0 {
		return nil, fmt.Errorf("none of %d secrets is usable: %w", len(secrets), ErrNoSecret)
	}
	return nil, ErrBadSignature
}

// rawKey uses a secret's bytes as the HMAC key, as Stripe, GitHub and the
// generic scheme do.
func rawKey(secret string) ([]byte, error) {
	return []byte(secret), nil
}

// matchAny is matchSecret for schemes with one signed string.
func matchAny(secrets []string, keyOf func(string) ([]byte, error), compute func(key []byte) []byte, sigs ...[]byte) error {
	_, err := matchSecret(secrets, keyOf, func(key []byte) [][]byte { return [][]byte{compute(key)} }, sigs)
	return err
}

// parseHexSig parses prefix + hex digest of size bytes (Slack "v0=", GitHub
// "sha256=", Linear none), or fails with ErrMalformedHeader. anyCase takes
// upper-case digits too, where the provider's SDK decodes the hex (GitHub's
// octokit); where it compares hex strings, only lowercase matches.
func parseHexSig(name, prefix string, size int, value string, anyCase bool) ([]byte, error) {
	enc, ok := strings.CutPrefix(value, prefix)
	decode, digits := decodeLowerHex, "lowercase hex digits"
	if anyCase {
		decode, digits = decodeHex, "hex digits"
	}
	sig, hexOK := decode(enc)
	if !ok || !hexOK || len(sig) != size {
		return nil, fmt.Errorf("%s: want %q followed by %d %s: %w", name, prefix, 2*size, digits, ErrMalformedHeader)
	}
	return sig, nil
}

// decodeHex decodes hex in either case.
func decodeHex(s string) ([]byte, bool) {
	b, err := hex.DecodeString(s)
	return b, err == nil
}

// decodeLowerHex decodes lowercase hex only: the one spelling a provider
// sends, and the only one its SDK accepts where it compares hex strings.
func decodeLowerHex(s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return nil, false
		}
	}
	return decodeHex(s)
}

// parseBase64Sig parses the canonical base64 of a size-byte digest (Square,
// Shopify, Twilio), or fails with ErrMalformedHeader.
func parseBase64Sig(name string, size int, value string) ([]byte, error) {
	sig, ok := decodeBase64(value)
	if !ok || len(sig) != size {
		return nil, fmt.Errorf("%s: want the base64 of a %d-byte digest: %w", name, size, ErrMalformedHeader)
	}
	return sig, nil
}

// decodeBase64 decodes standard, padded base64 in its canonical spelling
// only, as the providers' SDKs compare encoded strings. A value that
// re-encodes differently (unused low bits set, a line break) is refused.
// The check involves no secret, so it need not be constant-time.
func decodeBase64(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// checkToleranceAt rejects a signed time more than tol before or after now.
func checkToleranceAt(t, now time.Time, tol time.Duration) error {
	if d := now.Sub(t); d > tol {
		return fmt.Errorf("timestamp %s is %s old, tolerance %s: %w", t.UTC().Format(time.RFC3339), d.Truncate(time.Second), tol, ErrOutsideTolerance)
	}
	if d := t.Sub(now); d > tol {
		return fmt.Errorf("timestamp %s is %s in the future, tolerance %s: %w", t.UTC().Format(time.RFC3339), d.Truncate(time.Second), tol, ErrOutsideTolerance)
	}
	return nil
}

// hmacOf computes an HMAC over the concatenation of parts.
func hmacOf(newHash func() hash.Hash, key []byte, parts ...[]byte) []byte {
	m := hmac.New(newHash, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// hmacSHA256 is hmacOf with SHA-256, the hash most providers use.
func hmacSHA256(key []byte, parts ...[]byte) []byte {
	return hmacOf(sha256.New, key, parts...)
}

// formDoc turns a form-encoded body into a document for key derivation and
// type paths: field name to value, or to its values in the order sent when
// repeated. A body that is not a valid form is ErrMalformedBody.
func formDoc(raw []byte) (map[string]any, url.Values, error) {
	vals, err := url.ParseQuery(string(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("body is not form-encoded: %w", ErrMalformedBody)
	}
	doc := make(map[string]any, len(vals))
	for k, vs := range vals {
		if len(vs) == 1 {
			doc[k] = vs[0]
			continue
		}
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		doc[k] = list
	}
	return doc, vals, nil
}

// hexString is lowercase hex, as every hex-signing provider sends it.
func hexString(b []byte) string {
	return hex.EncodeToString(b)
}
