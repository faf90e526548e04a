package webhook

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Slack's scheme, as documented at
// https://api.slack.com/authentication/verifying-requests-from-slack
// (now https://docs.slack.dev/authentication/verifying-requests-from-slack):
//
//   - X-Slack-Signature is "v0=" + hex HMAC-SHA256, keyed with the app's
//     signing secret as given, of "v0:" + X-Slack-Request-Timestamp + ":" +
//     raw body. The timestamp is Unix seconds; the docs reject requests more
//     than five minutes away from local time.
//   - Events API deliveries are JSON; their event_id is kept across Slack's
//     retries (https://api.slack.com/apis/events-api#retries), so it is the
//     key, and the type is event.type (the outer type, such as
//     app_rate_limited, when there is no inner event).
//   - url_verification (https://api.slack.com/events/url_verification) is
//     answered with its challenge as text/plain.
//   - Interactivity payloads (a form field "payload" holding JSON) and slash
//     commands (plain form fields) carry no event id: their key is derived
//     from the payload (interactivity) or the fields (commands); the type is
//     the payload's type or the command name.
const (
	slackSignatureHeader = "X-Slack-Signature"
	slackTimestampHeader = "X-Slack-Request-Timestamp"
	slackVersion         = "v0"
)

var slackSpec = providerSpec{
	tolerance: 5 * time.Minute,
	build: func(_ Config, tol time.Duration) (providerSetup, error) {
		return providerSetup{
			scheme: slackScheme{tolerance: tol},
			keySrc: keyFromBody, keyPath: []string{"event_id"}, derive: true,
			typeSrc: typeFromMeta,
		}, nil
	},
}

// slackScheme verifies X-Slack-Signature.
type slackScheme struct {
	tolerance time.Duration
}

// slackMAC computes the v0 signature of body at timestamp ts, as sent.
func slackMAC(key []byte, ts string, body []byte) []byte {
	return hmacSHA256(key, []byte(slackVersion+":"+ts+":"), body)
}

func (s slackScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	values := headerValues(req.Header, slackSignatureHeader)
	if len(values) == 0 {
		return meta{}, fmt.Errorf("%s: %w", slackSignatureHeader, ErrMissingHeader)
	}
	ts, err := singleValue(req.Header, slackTimestampHeader)
	if err != nil {
		return meta{}, err
	}
	t, err := parseUnix(ts)
	if err != nil {
		return meta{}, fmt.Errorf("%s: %w", slackTimestampHeader, err)
	}
	sigs, err := parseHexSigs(slackSignatureHeader, slackVersion+"=", sha256.Size, values)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return slackMAC(key, ts, req.Body) }, sigs); err != nil {
		return meta{}, err
	}
	if err := checkTolerance(t, now, s.tolerance); err != nil {
		return meta{}, err
	}
	return slackBody(req.Body)
}

// slackBody reads an authenticated Slack body: a url_verification
// handshake, an Events API event, an interactivity payload or a slash
// command.
func slackBody(raw []byte) (meta, error) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		doc, err := decodeJSON(raw)
		if err != nil {
			return meta{}, err
		}
		if stringAt(doc, []string{"type"}) == "url_verification" {
			challenge := stringAt(doc, []string{"challenge"})
			if challenge == "" {
				return meta{}, fmt.Errorf("url_verification without a challenge: %w", ErrMalformedBody)
			}
			return meta{handshake: &Handshake{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(challenge)}}, nil
		}
		typ := stringAt(doc, []string{"event", "type"})
		if typ == "" {
			typ = stringAt(doc, []string{"type"})
		}
		return meta{doc: doc, hasDoc: true, typ: typ}, nil
	}
	form, vals, err := formDoc(raw)
	if err != nil {
		return meta{}, err
	}
	if payload, ok := vals["payload"]; ok {
		if len(payload) != 1 {
			return meta{}, fmt.Errorf("form has %d payload fields: %w", len(payload), ErrMalformedBody)
		}
		doc, err := decodeJSON([]byte(payload[0]))
		if err != nil {
			return meta{}, fmt.Errorf("interactivity payload: %w", err)
		}
		return meta{doc: doc, hasDoc: true, typ: stringAt(doc, []string{"type"})}, nil
	}
	return meta{doc: form, hasDoc: true, typ: vals.Get("command")}, nil
}

func (slackScheme) sign(m Message, secret string) (http.Header, error) {
	ts, err := signTimestamp(m)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(slackTimestampHeader, ts)
	h.Set(slackSignatureHeader, slackVersion+"="+hexString(slackMAC([]byte(secret), ts, m.Body)))
	h.Set("Content-Type", jsonOrForm(m.Body))
	return h, nil
}

// jsonOrForm is the Content-Type of a body that is JSON or form-encoded.
func jsonOrForm(body []byte) string {
	if _, err := decodeJSON(body); err == nil {
		return "application/json"
	}
	return "application/x-www-form-urlencoded"
}

// errNeedsID is the Sign error of schemes that carry the id in a header.
func errNeedsID(header string) error {
	return errors.New("message needs an ID for " + header)
}
