package webhook

import (
	"errors"
	"fmt"
	"net/http"
)

// NewUnsigned returns a Verifier that only reads keys and types, for a
// source whose channel authenticates its deliveries (an EventBridge bus,
// whose IAM policy decides who may put events). cfg.Provider names the key
// and type rules to apply (Stripe: the body's id and type); "" takes the
// channel's id and type unless KeyPath and TypePath say otherwise. Its
// Verify and Sign always fail: such a source has no HTTP door.
func NewUnsigned(cfg Config) (*Verifier, error) {
	own := cfg.Provider != ""
	if !own {
		cfg.Provider = providerStripe // a scheme New accepts; its key and type rules are replaced below
	}
	v, err := New(cfg)
	if err != nil {
		return nil, err
	}
	v.scheme = nil
	if !own {
		v.provider, v.derive, v.volatile = "", false, nil
		if cfg.KeyPath == "" {
			v.keySrc, v.keyPath = keyFromMeta, nil
		}
		if cfg.TypePath == "" {
			v.typeSrc, v.typePath = typeFromMeta, nil
		}
	}
	return v, nil
}

// Unsigned reads the key and type of a body that came without a signature
// (NewUnsigned), by Verify's rules and refusals. id and typ are what the
// channel says (EventBridge's id and detail-type). Errors wrap ErrNoKey.
func (v *Verifier) Unsigned(body []byte, id, typ string) (Event, error) {
	if v == nil {
		return Event{}, fmt.Errorf("unsigned: verifier not built: %w", ErrNoKey)
	}
	m := meta{id: id, typ: typ}
	if id == "" {
		m.idErr = ErrMissingHeader
	}
	if typ == "" {
		m.typErr = ErrMissingHeader
	}
	ev, err := v.extract(&Request{Body: body, Header: http.Header{}}, m)
	if err != nil && !errors.Is(err, ErrNoKey) {
		err = fmt.Errorf("%w: %w", ErrNoKey, err)
	}
	return ev, err
}
