package webhook

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Twitch EventSub's webhook transport
// (https://dev.twitch.tv/docs/eventsub/handling-webhook-events/):
//
//   - Twitch-Eventsub-Message-Signature is "sha256=" + hex HMAC-SHA256, keyed
//     with the subscription's secret (10 to 100 ASCII characters), of
//     Twitch-Eventsub-Message-Id + Twitch-Eventsub-Message-Timestamp (as
//     sent) + raw body.
//   - The timestamp is RFC 3339; the docs reject messages over 10 minutes
//     old, the default tolerance (both ways).
//   - Twitch-Eventsub-Message-Type is notification, revocation, or
//     webhook_callback_verification (answered with the body's challenge as
//     text/plain). A resent message keeps its message id, the key. The type
//     is Twitch-Eventsub-Subscription-Type, or "revocation".
const (
	twitchIDHeader        = "Twitch-Eventsub-Message-Id"
	twitchTimestampHeader = "Twitch-Eventsub-Message-Timestamp"
	twitchSignatureHeader = "Twitch-Eventsub-Message-Signature"
	twitchTypeHeader      = "Twitch-Eventsub-Message-Type"
	twitchSubTypeHeader   = "Twitch-Eventsub-Subscription-Type"
	twitchPrefix          = "sha256="

	twitchNotification = "notification"
	twitchVerification = "webhook_callback_verification"
	twitchRevocation   = "revocation"
)

var twitchSpec = providerSpec{
	tolerance: 10 * time.Minute,
	build: func(_ Config, tol time.Duration) (providerSetup, error) {
		return providerSetup{scheme: twitchScheme{tolerance: tol}, keySrc: keyFromMeta, typeSrc: typeFromMeta}, nil
	},
}

// twitchScheme verifies Twitch-Eventsub-Message-Signature.
type twitchScheme struct {
	tolerance time.Duration
}

// twitchKey accepts only secrets Twitch accepts: 10 to 100 ASCII characters.
func twitchKey(secret string) ([]byte, error) {
	if len(secret) < 10 || len(secret) > 100 {
		return nil, errors.New("twitch secrets are 10 to 100 characters")
	}
	for i := 0; i < len(secret); i++ {
		if secret[i] > 0x7e || secret[i] < 0x20 {
			return nil, errors.New("twitch secrets are printable ASCII")
		}
	}
	return []byte(secret), nil
}

// parseTwitchTimestamp parses Twitch-Eventsub-Message-Timestamp.
func parseTwitchTimestamp(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || len(s) > 40 {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time: %w", twitchTimestampHeader, clip(s), ErrMalformedHeader)
	}
	return t, nil
}

func twitchMAC(key []byte, id, ts string, body []byte) []byte {
	return hmacSHA256(key, []byte(id), []byte(ts), body)
}

func (s twitchScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	value, err := singleValue(req.Header, twitchSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	id, err := singleValue(req.Header, twitchIDHeader)
	if err != nil {
		return meta{}, err
	}
	ts, err := singleValue(req.Header, twitchTimestampHeader)
	if err != nil {
		return meta{}, err
	}
	t, err := parseTwitchTimestamp(ts)
	if err != nil {
		return meta{}, err
	}
	sig, err := parseHexSig(twitchSignatureHeader, twitchPrefix, sha256.Size, value, true)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, twitchKey, func(key []byte) []byte { return twitchMAC(key, id, ts, req.Body) }, sig); err != nil {
		return meta{}, err
	}
	if err := checkToleranceAt(t, now, s.tolerance); err != nil {
		return meta{}, err
	}
	msgType, err := singleValue(req.Header, twitchTypeHeader)
	if err != nil {
		return meta{}, err
	}
	m := meta{id: id}
	switch msgType {
	case twitchVerification:
		doc, err := decodeJSON(req.Body)
		if err != nil {
			return meta{}, err
		}
		challenge := stringAt(doc, []string{"challenge"})
		if challenge == "" {
			return meta{}, fmt.Errorf("%s without a challenge: %w", twitchVerification, ErrMalformedBody)
		}
		m.handshake = &Handshake{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(challenge)}
	case twitchNotification:
		m.typ, m.typErr = singleValue(req.Header, twitchSubTypeHeader)
	default:
		// revocation, and any message type Twitch adds later, is recorded
		// under its message type so it is never routed as an event.
		m.typ = msgType
	}
	return m, nil
}

func (twitchScheme) sign(m Message, secret string) (http.Header, error) {
	if m.ID == "" {
		return nil, errNeedsID(twitchIDHeader)
	}
	if m.Now.IsZero() {
		return nil, errors.New("message needs a time (Now)")
	}
	key, err := twitchKey(secret)
	if err != nil {
		return nil, err
	}
	ts := m.Now.UTC().Format(time.RFC3339Nano)
	h := http.Header{}
	h.Set(twitchIDHeader, m.ID)
	h.Set(twitchTimestampHeader, ts)
	h.Set(twitchSignatureHeader, twitchPrefix+hexString(twitchMAC(key, m.ID, ts, m.Body)))
	h.Set(twitchTypeHeader, twitchNotification)
	if m.Type != "" {
		h.Set(twitchSubTypeHeader, m.Type)
	}
	h.Set("Content-Type", "application/json")
	return h, nil
}
