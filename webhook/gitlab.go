package webhook

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// GitLab's scheme (https://docs.gitlab.com/user/project/integrations/webhooks/):
//
//   - X-Gitlab-Token carries the secret token itself: no HMAC, no timestamp.
//     It is compared in constant time as SHA-256 digests, so not even its
//     length leaks.
//   - Idempotency-Key (GitLab 17.4+) is the same on every retry: the key.
//     Without it the key is derived from the body. X-Gitlab-Event-UUID is no
//     event id: recursive webhooks (triggered by a handler's API call that
//     passed it on) share one, and a different event would be dropped as a
//     duplicate. X-Gitlab-Event names the event (Push Hook, ...).
const (
	gitlabTokenHeader       = "X-Gitlab-Token"
	gitlabEventHeader       = "X-Gitlab-Event"
	gitlabEventUUIDHeader   = "X-Gitlab-Event-UUID"
	gitlabIdempotencyHeader = "Idempotency-Key"
)

var gitlabSpec = providerSpec{
	build: func(Config, time.Duration) (providerSetup, error) {
		return providerSetup{scheme: gitlabScheme{}, keySrc: keyFromMeta, derive: true, typeSrc: typeFromMeta}, nil
	},
}

// gitlabScheme verifies X-Gitlab-Token.
type gitlabScheme struct{}

func (gitlabScheme) authenticate(req *Request, secrets []string, _ time.Time) (meta, error) {
	// A token is the user's own string and may hold a comma; a joined
	// repetition of it matches no secret.
	token, err := listValue(req.Header, gitlabTokenHeader)
	if err != nil {
		return meta{}, err
	}
	got := sha256.Sum256([]byte(token))
	usable, ok := 0, false
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		usable++
		want := sha256.Sum256([]byte(secret))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			ok = true
		}
	}
	switch {
	case usable == 0:
		return meta{}, fmt.Errorf("none of %d secrets is usable: %w", len(secrets), ErrNoSecret)
	case !ok:
		return meta{}, fmt.Errorf("%s matches no secret: %w", gitlabTokenHeader, ErrBadSignature)
	}
	var m meta
	m.id, m.idErr = singleValue(req.Header, gitlabIdempotencyHeader)
	m.typ, m.typErr = singleValue(req.Header, gitlabEventHeader)
	return m, nil
}

func (gitlabScheme) sign(m Message, secret string) (http.Header, error) {
	if m.ID == "" {
		return nil, errNeedsID(gitlabIdempotencyHeader)
	}
	if m.Type == "" {
		return nil, errors.New("message needs a Type for " + gitlabEventHeader)
	}
	h := http.Header{}
	h.Set(gitlabTokenHeader, secret)
	h.Set(gitlabEventHeader, m.Type)
	h.Set(gitlabEventUUIDHeader, m.ID)
	h.Set(gitlabIdempotencyHeader, m.ID)
	h.Set("Content-Type", "application/json")
	return h, nil
}
