package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"time"
)

// Shopify's scheme (https://shopify.dev/docs/apps/build/webhooks/subscribe/https,
// https://shopify.dev/docs/apps/build/webhooks/ignore-duplicates, and
// @shopify/shopify-api lib/webhooks/validate.ts and header-names.ts):
//
//   - X-Shopify-Hmac-Sha256 is the base64 HMAC-SHA256 of the raw body, keyed
//     with the app's client secret. No signed timestamp
//     (X-Shopify-Triggered-At is unsigned and not checked).
//   - The docs name X-Shopify-Event-Id as what marks a duplicate, so it is
//     the key; older deliveries without it use X-Shopify-Webhook-Id.
//     X-Shopify-Topic is the type.
//   - Newer deliveries name the same headers without X- (shopify-topic, ...)
//     and, for now, send the X- ones too. Both are read; the two spellings
//     of one header must agree.
const (
	shopifySignatureHeader = "X-Shopify-Hmac-Sha256"
	shopifyWebhookIDHeader = "X-Shopify-Webhook-Id"
	shopifyEventIDHeader   = "X-Shopify-Event-Id"
	shopifyTopicHeader     = "X-Shopify-Topic"
	shopifyDomainHeader    = "X-Shopify-Shop-Domain"
	shopifyVersionHeader   = "X-Shopify-API-Version"
	shopifyTriggeredHeader = "X-Shopify-Triggered-At"

	shopifyNewSignatureHeader = "Shopify-Hmac-Sha256"
	shopifyNewEventIDHeader   = "Shopify-Event-Id"
	shopifyNewTopicHeader     = "Shopify-Topic"
)

// What Sign sends in the headers Shopify's library requires and this
// package never reads: a shop's domain and an API version it knows.
const (
	shopifySignDomain     = "example.myshopify.com"
	shopifySignAPIVersion = "2026-04"
)

var shopifySpec = providerSpec{
	build: func(Config, time.Duration) (providerSetup, error) {
		return providerSetup{scheme: shopifyScheme{}, keySrc: keyFromMeta, typeSrc: typeFromMeta}, nil
	},
}

// shopifyScheme verifies X-Shopify-Hmac-Sha256 (or Shopify-Hmac-Sha256).
type shopifyScheme struct{}

func (shopifyScheme) authenticate(req *Request, secrets []string, _ time.Time) (meta, error) {
	value, err := singleValue(req.Header, shopifySignatureHeader, shopifyNewSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	sig, err := parseBase64Sig(shopifySignatureHeader, sha256.Size, value)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return hmacSHA256(key, req.Body) }, sig); err != nil {
		return meta{}, err
	}
	var m meta
	m.id, m.idErr = singleValue(req.Header, shopifyEventIDHeader, shopifyNewEventIDHeader)
	if m.idErr != nil && errorsIsMissing(m.idErr) {
		m.id, m.idErr = singleValue(req.Header, shopifyWebhookIDHeader)
	}
	m.typ, m.typErr = singleValue(req.Header, shopifyTopicHeader, shopifyNewTopicHeader)
	return m, nil
}

// sign sends what a Shopify delivery in the X- format carries; the
// domain and API version are shopifySignDomain and shopifySignAPIVersion,
// and X-Shopify-Triggered-At is m.Now when set.
func (shopifyScheme) sign(m Message, secret string) (http.Header, error) {
	if m.ID == "" {
		return nil, errNeedsID(shopifyEventIDHeader)
	}
	if m.Type == "" {
		return nil, errors.New("message needs a Type for " + shopifyTopicHeader)
	}
	h := http.Header{}
	h.Set(shopifySignatureHeader, base64.StdEncoding.EncodeToString(hmacSHA256([]byte(secret), m.Body)))
	h.Set(shopifyEventIDHeader, m.ID)
	h.Set(shopifyWebhookIDHeader, m.ID)
	h.Set(shopifyTopicHeader, m.Type)
	h.Set(shopifyDomainHeader, shopifySignDomain)
	h.Set(shopifyVersionHeader, shopifySignAPIVersion)
	if !m.Now.IsZero() {
		h.Set(shopifyTriggeredHeader, m.Now.UTC().Format(time.RFC3339Nano))
	}
	h.Set("Content-Type", "application/json")
	return h, nil
}
