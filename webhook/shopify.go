package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"
)

// Shopify's scheme, as documented at
// https://shopify.dev/docs/apps/build/webhooks/subscribe/https (verify) and
// https://shopify.dev/docs/apps/build/webhooks/ignore-duplicates (deduplicate):
//
//   - X-Shopify-Hmac-Sha256 is the base64 HMAC-SHA256 of the raw body, keyed
//     with the app's client secret as given. There is no signed timestamp
//     (X-Shopify-Triggered-At is unsigned and not checked).
//   - The docs name X-Shopify-Event-Id as the value that marks a duplicate, so
//     it is the key; X-Shopify-Webhook-Id is used when it is absent (older
//     deliveries). X-Shopify-Topic is the type.
const (
	shopifySignatureHeader = "X-Shopify-Hmac-Sha256"
	shopifyWebhookIDHeader = "X-Shopify-Webhook-Id"
	shopifyEventIDHeader   = "X-Shopify-Event-Id"
	shopifyTopicHeader     = "X-Shopify-Topic"
)

var shopifySpec = providerSpec{
	build: func(Config, time.Duration) (providerSetup, error) {
		return providerSetup{scheme: shopifyScheme{}, keySrc: keyFromMeta, typeSrc: typeFromMeta}, nil
	},
}

// shopifyScheme verifies X-Shopify-Hmac-Sha256.
type shopifyScheme struct{}

func (shopifyScheme) authenticate(req *Request, secrets []string, _ time.Time) (meta, error) {
	values := headerValues(req.Header, shopifySignatureHeader)
	if len(values) == 0 {
		return meta{}, fmt.Errorf("%s: %w", shopifySignatureHeader, ErrMissingHeader)
	}
	sigs, err := parseBase64Sigs(shopifySignatureHeader, sha256.Size, values)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return hmacSHA256(key, req.Body) }, sigs); err != nil {
		return meta{}, err
	}
	var m meta
	m.id, m.idErr = singleValue(req.Header, shopifyEventIDHeader)
	if m.idErr != nil && errorsIsMissing(m.idErr) {
		m.id, m.idErr = singleValue(req.Header, shopifyWebhookIDHeader)
	}
	m.typ, m.typErr = singleValue(req.Header, shopifyTopicHeader)
	return m, nil
}

func (shopifyScheme) sign(m Message, secret string) (http.Header, error) {
	if m.ID == "" {
		return nil, errNeedsID(shopifyEventIDHeader)
	}
	h := http.Header{}
	h.Set(shopifySignatureHeader, base64.StdEncoding.EncodeToString(hmacSHA256([]byte(secret), m.Body)))
	h.Set(shopifyEventIDHeader, m.ID)
	h.Set(shopifyWebhookIDHeader, m.ID)
	if m.Type != "" {
		h.Set(shopifyTopicHeader, m.Type)
	}
	h.Set("Content-Type", "application/json")
	return h, nil
}
