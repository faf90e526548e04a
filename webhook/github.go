package webhook

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"
)

// GitHub's scheme (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries,
// https://docs.github.com/en/webhooks/webhook-events-and-payloads#delivery-headers):
//
//   - X-Hub-Signature-256 is "sha256=" + hex HMAC-SHA256 of the raw body,
//     keyed with the secret as given. No timestamp.
//   - X-GitHub-Delivery is a GUID kept on redelivery; X-GitHub-Event names
//     the event.
//   - The legacy X-Hub-Signature (sha1=...) is sent by Sign, ignored by Verify.
const (
	githubSignatureHeader = "X-Hub-Signature-256"
	githubLegacyHeader    = "X-Hub-Signature"
	githubDeliveryHeader  = "X-GitHub-Delivery"
	githubEventHeader     = "X-GitHub-Event"
	githubPrefix          = "sha256="
)

// githubScheme verifies X-Hub-Signature-256.
type githubScheme struct{}

// parseGitHubSignature parses X-Hub-Signature-256: "sha256=" + 64 lowercase
// hex digits.
func parseGitHubSignature(value string) ([]byte, error) {
	return parseHexSig(githubSignatureHeader, githubPrefix, sha256.Size, value, true)
}

// formatGitHubSignature writes an X-Hub-Signature-256 value.
func formatGitHubSignature(sig []byte) string {
	return githubPrefix + hex.EncodeToString(sig)
}

// githubMAC computes the X-Hub-Signature-256 signature of body.
func githubMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

func (githubScheme) authenticate(req *Request, secrets []string, _ time.Time) (meta, error) {
	value, err := singleValue(req.Header, githubSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	sig, err := parseGitHubSignature(value)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return githubMAC(key, req.Body) }, sig); err != nil {
		return meta{}, err
	}
	var m meta
	m.id, m.idErr = singleValue(req.Header, githubDeliveryHeader)
	m.typ, m.typErr = singleValue(req.Header, githubEventHeader)
	return m, nil
}

func (githubScheme) sign(m Message, secret string) (http.Header, error) {
	if m.ID == "" {
		return nil, errors.New("message needs an ID for " + githubDeliveryHeader)
	}
	if m.Type == "" {
		return nil, errors.New("message needs a Type for " + githubEventHeader)
	}
	legacy := hmac.New(sha1.New, []byte(secret))
	legacy.Write(m.Body)
	h := http.Header{}
	h.Set(githubSignatureHeader, formatGitHubSignature(githubMAC([]byte(secret), m.Body)))
	h.Set(githubLegacyHeader, "sha1="+hex.EncodeToString(legacy.Sum(nil)))
	h.Set(githubDeliveryHeader, m.ID)
	h.Set(githubEventHeader, m.Type)
	h.Set("Content-Type", "application/json")
	return h, nil
}
