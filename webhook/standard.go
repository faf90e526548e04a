package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The Standard Webhooks scheme
// (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md),
// which Svix also uses (https://docs.svix.com/receiving/verifying-payloads/how-manual):
//
//   - webhook-id, webhook-timestamp (Unix seconds) and webhook-signature;
//     Svix sends the svix- names, or the webhook- ones when white-labelled.
//     Both families are accepted for both providers.
//   - The signed content is id + "." + timestamp + "." + raw body, with
//     HMAC-SHA256 keyed with the base64-decoded part of the whsec_ secret.
//   - webhook-signature is a space-separated list of "version,signature";
//     "v1,<base64>" is symmetric, other versions (v1a is ed25519) are skipped.
//   - The reference libraries use a tolerance of 5 minutes.
const (
	standardSecretPrefix = "whsec_"
	standardVersion      = "v1"
)

// standardHeaders names the headers of one family.
type standardHeaders struct {
	id, timestamp, signature string
}

var (
	webhookFamily = standardHeaders{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"}
	svixFamily    = standardHeaders{"Svix-Id", "Svix-Timestamp", "Svix-Signature"}
)

// standardScheme verifies Standard Webhooks and Svix signatures.
type standardScheme struct {
	tolerance time.Duration
	svix      bool // Sign uses the svix- header names
}

// parseStandardSignatures returns the decoded v1 signatures of
// webhook-signature. Other versions, entries without a comma and v1 entries
// not in canonical base64 are skipped; none left is an error. A second
// comma in an entry is a *RepeatedHeaderError: base64 has none, so it is
// where a gateway joined two headers.
func parseStandardSignatures(value string) ([][]byte, error) {
	return parseStandardSignaturesIn(webhookFamily.signature, value)
}

// parseStandardSignaturesIn is parseStandardSignatures of the header name.
func parseStandardSignaturesIn(name, value string) ([][]byte, error) {
	var sigs [][]byte
	for _, entry := range strings.Fields(value) {
		version, enc, ok := strings.Cut(entry, ",")
		if strings.Contains(enc, ",") {
			return nil, &RepeatedHeaderError{Header: name, Detail: "an entry with two commas"}
		}
		if !ok || version != standardVersion {
			continue
		}
		sig, ok := decodeBase64(enc)
		if !ok || len(sig) == 0 {
			continue
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return nil, fmt.Errorf("%s: no %s,<base64> entry: %w", webhookFamily.signature, standardVersion, ErrMalformedHeader)
	}
	return sigs, nil
}

// formatStandardSignatures writes a webhook-signature value.
func formatStandardSignatures(sigs [][]byte) string {
	parts := make([]string, len(sigs))
	for i, s := range sigs {
		parts[i] = standardVersion + "," + base64.StdEncoding.EncodeToString(s)
	}
	return strings.Join(parts, " ")
}

// standardKey decodes a whsec_ secret into its HMAC key. The prefix is
// optional, as in the reference libraries.
func standardKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, standardSecretPrefix))
	if err != nil || len(key) == 0 {
		return nil, errors.New("secret is not whsec_ followed by base64")
	}
	return key, nil
}

// standardMAC computes the v1 signature of a message.
func standardMAC(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

func (s standardScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	value, sigHeader, err := readOnce(req.Header, true, webhookFamily.signature, svixFamily.signature)
	if err != nil {
		return meta{}, err
	}
	id, err := singleValue(req.Header, webhookFamily.id, svixFamily.id)
	if err != nil {
		return meta{}, err
	}
	ts, err := singleValue(req.Header, webhookFamily.timestamp, svixFamily.timestamp)
	if err != nil {
		return meta{}, err
	}
	t, err := parseUnix(ts)
	if err != nil {
		return meta{}, fmt.Errorf("%s: %w", webhookFamily.timestamp, err)
	}
	sigs, err := parseStandardSignaturesIn(sigHeader, value)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, standardKey, func(key []byte) []byte { return standardMAC(key, id, ts, req.Body) }, sigs...); err != nil {
		return meta{}, err
	}
	if err := checkTolerance(t, now, s.tolerance); err != nil {
		return meta{}, err
	}
	return meta{id: id}, nil
}

func (s standardScheme) sign(m Message, secret string) (http.Header, error) {
	if m.ID == "" {
		return nil, errors.New("message needs an ID for " + webhookFamily.id)
	}
	ts, err := signTimestamp(m)
	if err != nil {
		return nil, err
	}
	key, err := standardKey(secret)
	if err != nil {
		return nil, err
	}
	names := webhookFamily
	if s.svix {
		names = svixFamily
	}
	h := http.Header{}
	h.Set(names.id, m.ID)
	h.Set(names.timestamp, ts)
	h.Set(names.signature, formatStandardSignatures([][]byte{standardMAC(key, m.ID, ts, m.Body)}))
	h.Set("Content-Type", "application/json")
	return h, nil
}
