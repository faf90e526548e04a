package webhook

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Linear's scheme (https://linear.app/developers/webhooks#securing-webhooks,
// and @linear/sdk packages/sdk/src/webhooks/client.ts):
//
//   - Linear-Signature is the hex HMAC-SHA256 of the raw body, keyed with the
//     signing secret. No prefix.
//   - The timestamp is the body's webhookTimestamp, Unix milliseconds, within
//     a minute as the SDK checks it. The SDK skips an absent one; here it is
//     required, since Linear always sends it.
//   - Linear-Delivery is the key; Linear-Event names the resource type
//     (Issue, Comment...), else the body's type.
const (
	linearSignatureHeader = "Linear-Signature"
	linearDeliveryHeader  = "Linear-Delivery"
	linearEventHeader     = "Linear-Event"
	linearTimestampField  = "webhookTimestamp"
)

var linearSpec = providerSpec{
	tolerance: time.Minute,
	// webhookTimestamp is the send time, which a retry must renew to pass
	// the one-minute window, so it is left out of the body's digest: a
	// retry of the same delivery is not a different body.
	volatile: []string{linearTimestampField},
	build: func(_ Config, tol time.Duration) (providerSetup, error) {
		return providerSetup{scheme: linearScheme{tolerance: tol}, keySrc: keyFromMeta, typeSrc: typeFromMeta}, nil
	},
}

// linearTypePath is where the body names the type when Linear-Event is absent.
var linearTypePath = []string{"type"}

// linearScheme verifies Linear-Signature.
type linearScheme struct {
	tolerance time.Duration
}

// linearTimestamp reads webhookTimestamp (Unix milliseconds) from a body.
func linearTimestamp(doc any) (time.Time, error) {
	v, _ := lookup(doc, []string{linearTimestampField})
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, fmt.Errorf("body has no numeric %s: %w", linearTimestampField, ErrMalformedBody)
	}
	ms, err := n.Int64()
	// 15 digits of milliseconds reach the year 33658, as parseUnix's bound.
	if err != nil || ms < 0 || ms >= 1e15 {
		return time.Time{}, fmt.Errorf("%s %q is not Unix milliseconds: %w", linearTimestampField, clip(n.String()), ErrMalformedBody)
	}
	return time.UnixMilli(ms), nil
}

func (s linearScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	value, err := singleValue(req.Header, linearSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	sig, err := parseHexSig(linearSignatureHeader, "", sha256.Size, value, false)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return hmacSHA256(key, req.Body) }, sig); err != nil {
		return meta{}, err
	}
	doc, err := decodeJSON(req.Body)
	if err != nil {
		return meta{}, err
	}
	t, err := linearTimestamp(doc)
	if err != nil {
		return meta{}, err
	}
	if err := checkToleranceAt(t, now, s.tolerance); err != nil {
		return meta{}, err
	}
	m := meta{doc: doc, docJSON: req.Body, hasDoc: true}
	m.id, m.idErr = singleValue(req.Header, linearDeliveryHeader)
	m.typ, m.typErr = singleValue(req.Header, linearEventHeader)
	if m.typErr != nil && errorsIsMissing(m.typErr) {
		m.typErr = uniqueAt(req.Body, linearTypePath)
		if m.typErr == nil {
			m.typ, m.typErr = textAt(doc, linearTypePath)
		}
	}
	return m, nil
}

func (linearScheme) sign(m Message, secret string) (http.Header, error) {
	if m.ID == "" {
		return nil, errNeedsID(linearDeliveryHeader)
	}
	h := http.Header{}
	h.Set(linearSignatureHeader, hexString(hmacSHA256([]byte(secret), m.Body)))
	h.Set(linearDeliveryHeader, m.ID)
	if m.Type != "" {
		h.Set(linearEventHeader, m.Type)
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	return h, nil
}
