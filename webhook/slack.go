package webhook

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Slack's scheme (https://docs.slack.dev/authentication/verifying-requests-from-slack):
//
//   - X-Slack-Signature is "v0=" + hex HMAC-SHA256, keyed with the signing
//     secret, of "v0:" + X-Slack-Request-Timestamp + ":" + raw body. The
//     docs reject timestamps more than five minutes off.
//   - Events API deliveries are JSON; their event_id survives retries
//     (https://api.slack.com/apis/events-api#retries), so it is the key. The
//     type is event.type, or the outer type (app_rate_limited) without one.
//   - url_verification is answered with its challenge as text/plain.
//   - Interactivity payloads (a form field "payload" holding JSON) and slash
//     commands (form fields) carry no event id: the key is derived from the
//     payload or the fields; the type is the payload's type or the command.
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
	value, err := singleValue(req.Header, slackSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	ts, err := singleValue(req.Header, slackTimestampHeader)
	if err != nil {
		return meta{}, err
	}
	t, err := parseUnix(ts)
	if err != nil {
		return meta{}, fmt.Errorf("%s: %w", slackTimestampHeader, err)
	}
	sig, err := parseHexSig(slackSignatureHeader, slackVersion+"=", sha256.Size, value, false)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return slackMAC(key, ts, req.Body) }, sig); err != nil {
		return meta{}, err
	}
	if err := checkTolerance(t, now, s.tolerance); err != nil {
		return meta{}, err
	}
	m, err := slackBody(req.Body)
	if err != nil {
		// Signed, but nothing can be read from the body.
		return meta{}, fmt.Errorf("%w: %w", ErrNoKey, err)
	}
	return m, nil
}

// Where Slack's bodies name what they are.
var (
	slackTypePath      = []string{"type"}
	slackEventTypePath = []string{"event", "type"}
)

// slackBody reads an authenticated Slack body: a handshake, an event, an
// interactivity payload or a slash command. The members that name the type
// (and so the handshake) may not come twice.
func slackBody(raw []byte) (meta, error) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		doc, err := decodeJSON(raw)
		if err != nil {
			return meta{}, err
		}
		if err := uniqueAt(raw, slackTypePath, slackEventTypePath); err != nil {
			return meta{}, err
		}
		outer, err := textAt(doc, slackTypePath)
		if err != nil {
			return meta{}, err
		}
		if outer == "url_verification" {
			challenge := stringAt(doc, []string{"challenge"})
			if challenge == "" {
				return meta{}, fmt.Errorf("url_verification without a challenge: %w", ErrMalformedBody)
			}
			return meta{handshake: &Handshake{Status: http.StatusOK, ContentType: "text/plain", Body: []byte(challenge)}}, nil
		}
		typ, err := textAt(doc, slackEventTypePath)
		if err != nil {
			return meta{}, err
		}
		if typ == "" {
			typ = outer
		}
		return meta{doc: doc, docJSON: raw, hasDoc: true, typ: typ}, nil
	}
	form, vals, err := formDoc(raw)
	if err != nil {
		return meta{}, err
	}
	if payload, ok := vals["payload"]; ok {
		if len(payload) != 1 {
			return meta{}, fmt.Errorf("form has %d payload fields: %w", len(payload), ErrMalformedBody)
		}
		src := []byte(payload[0])
		doc, err := decodeJSON(src)
		if err != nil {
			return meta{}, fmt.Errorf("interactivity payload: %w", err)
		}
		if err := uniqueAt(src, slackTypePath); err != nil {
			return meta{}, fmt.Errorf("interactivity payload: %w", err)
		}
		typ, err := textAt(doc, slackTypePath)
		if err != nil {
			return meta{}, fmt.Errorf("interactivity payload: %w", err)
		}
		return meta{doc: doc, docJSON: src, hasDoc: true, typ: typ}, nil
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
