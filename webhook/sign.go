package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Message is what Sign needs to produce a sender's headers.
type Message struct {
	ID   string // the event id, where the scheme carries it in a header (not Stripe, Slack, Square, Paddle, Intercom)
	Type string // the event type, where the scheme carries it in a header (GitHub, Linear, Twitch, GitLab, Shopify)
	Body []byte
	URL  string    // the URL the sender posts to, for the schemes that sign it (twilio, square)
	Now  time.Time // the send time, for the schemes that sign a timestamp
}

// Sign returns every header a real sender would send with m.Body,
// Content-Type included, for tests and local runs. It needs m.ID and m.Type
// where the scheme carries them in headers, and m.Now where it signs a time.
func (v *Verifier) Sign(m Message, secret string) (http.Header, error) {
	if v == nil || v.scheme == nil {
		return nil, errors.New("sign: verifier not built with New")
	}
	if secret == "" {
		return nil, fmt.Errorf("sign %s: %w", v.provider, ErrNoSecret)
	}
	h, err := v.scheme.sign(m, secret)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", v.provider, err)
	}
	return h, nil
}

// signTimestamp is m.Now as Unix seconds, for Sign.
func signTimestamp(m Message) (string, error) {
	if m.Now.IsZero() || m.Now.Unix() < 0 {
		return "", errors.New("message needs a time (Now) after 1970")
	}
	return strconv.FormatInt(m.Now.Unix(), 10), nil
}
