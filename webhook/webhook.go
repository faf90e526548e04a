package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// maxKeyLen bounds an idempotency key taken from a header or the body; longer
// values are refused rather than stored.
const maxKeyLen = 512

// Request is an incoming delivery as the verifier sees it.
type Request struct {
	Method string
	URL    string      // absolute URL the sender posted to, query string included (signed by twilio and square)
	Header http.Header // canonical header keys
	Body   []byte      // raw body bytes, already base64-decoded if the gateway encoded them
}

// Event is what a verified delivery yields.
type Event struct {
	ID        string     // idempotency key: the provider's event/delivery id, or a derived key
	Type      string     // provider event type ("" when the scheme has none)
	Derived   bool       // ID was derived (docs/design.md §2), not given by the provider
	Handshake *Handshake // non-nil: answer this and touch nothing (Slack, Zoom, Twitch, Intercom); ID is then ""
}

// Handshake is a reply sent as is, without touching the ledger.
type Handshake struct {
	Status      int
	ContentType string
	Body        []byte
}

// scheme is one signature scheme: it authenticates a request and says what
// its headers carry, and it signs like the sender does.
type scheme interface {
	// authenticate checks the signature with any of secrets and the timestamp
	// against now.
	authenticate(req *Request, secrets []string, now time.Time) (meta, error)
	// sign returns the headers a sender would send for m.
	sign(m Message, secret string) (http.Header, error)
}

// meta is what the authenticated request says about the event. An error
// field is returned only when that value is actually needed.
type meta struct {
	id, typ       string
	idErr, typErr error
	// handshake, when set, is answered as is; no key is extracted.
	handshake *Handshake
	// doc is the body as a JSON document when the scheme decoded it itself
	// (a form, or JSON it had to read); hasDoc says it is set. docJSON is
	// the JSON text doc came from, nil when doc is a form's fields.
	doc     any
	docJSON []byte
	hasDoc  bool
}

// keySource says where an event's key comes from.
type keySource int

const (
	keyFromMeta   keySource = iota // the scheme's id header
	keyFromHeader                  // Config.KeyHeader
	keyFromBody                    // a JSON path in the body (Stripe "id", Config.KeyPath)
	keyDerived                     // docs/design.md §2 derivation
)

// typeSource says where an event's type comes from.
type typeSource int

const (
	typeNone         typeSource = iota
	typeFromMeta                // the scheme's type header
	typeFromBody                // a JSON path; the body must be JSON
	typeFromBodySoft            // a JSON path if the body is a JSON object, else ""
)

// Verifier verifies deliveries of one source. Safe for concurrent use.
type Verifier struct {
	provider   string
	scheme     scheme
	keySrc     keySource
	keyHeader  string
	keyPath    []string
	keyNumbers bool // the key at keyPath may be a JSON integer (a configured key_path)
	derive     bool // derive a key when the scheme's own key is absent
	rawDerive  bool // a body that is not JSON derives its key from the raw bytes (generic)
	typeSrc    typeSource
	typePath   []string
	volatile   [][]string
}

// Provider returns the provider name the Verifier was configured with.
func (v *Verifier) Provider() string {
	if v == nil {
		return ""
	}
	return v.provider
}

// Verify checks req's signature with any of secrets (so secrets can rotate),
// checks its timestamp against now where the scheme has one, and then extracts
// the event's key and type. Errors wrap the package's sentinel errors.
func (v *Verifier) Verify(req *Request, secrets []string, now time.Time) (Event, error) {
	if v == nil || v.scheme == nil {
		return Event{}, fmt.Errorf("verify: verifier not built with New: %w", ErrNoSecret)
	}
	if req == nil {
		return Event{}, fmt.Errorf("verify: nil request: %w", ErrMissingHeader)
	}
	if len(secrets) == 0 {
		return Event{}, fmt.Errorf("verify %s: %w", v.provider, ErrNoSecret)
	}
	m, err := v.scheme.authenticate(req, secrets, now)
	if err != nil {
		return Event{}, fmt.Errorf("verify %s: %w", v.provider, err)
	}
	ev, err := v.extract(req, m)
	if err != nil {
		// The signature checked out: whatever went wrong is about the key,
		// and callers (hookledger verify) tell the two apart by ErrNoKey.
		if !errors.Is(err, ErrNoKey) {
			err = fmt.Errorf("%w: %w", ErrNoKey, err)
		}
		return Event{}, fmt.Errorf("verify %s: signature valid, %w", v.provider, err)
	}
	return ev, nil
}

// extract finds the key and type of an authenticated request, or returns
// its handshake.
func (v *Verifier) extract(req *Request, m meta) (Event, error) {
	if m.handshake != nil {
		return Event{Handshake: m.handshake}, nil
	}
	r := &docReader{b: body{raw: req.Body}}
	if m.hasDoc {
		r.b.doc, r.b.src, r.b.parsed = m.doc, m.docJSON, true
	}
	// The members the key and type are read from, checked once for copies.
	if v.typeSrc == typeFromBody || v.typeSrc == typeFromBodySoft {
		r.paths = append(r.paths, v.typePath)
	}
	if v.keySrc == keyFromBody {
		r.paths = append(r.paths, v.keyPath)
	}
	var ev Event
	var err error
	if ev.Type, err = v.eventType(m, r); err != nil {
		return Event{}, err
	}
	if ev.ID, ev.Derived, err = v.eventID(req, m, r, ev.Type); err != nil {
		return Event{}, err
	}
	if ev.ID == "" {
		return Event{}, ErrNoKey
	}
	if len(ev.ID) > maxKeyLen {
		return Event{}, fmt.Errorf("key is %d bytes, limit %d: %w", len(ev.ID), maxKeyLen, ErrNoKey)
	}
	return ev, nil
}

// eventType reads the event's type where the provider puts it.
func (v *Verifier) eventType(m meta, r *docReader) (string, error) {
	switch v.typeSrc {
	case typeFromMeta:
		// A type header is optional; only an ambiguous one is refused.
		if m.typErr != nil && !errors.Is(m.typErr, ErrMissingHeader) {
			return "", m.typErr
		}
		return m.typ, nil
	case typeFromBodySoft:
		// A body that is not JSON has no type; one that is has it right.
		if _, err := r.b.json(); err != nil {
			return "", nil
		}
		fallthrough
	case typeFromBody:
		d, err := r.doc()
		if err != nil {
			return "", err
		}
		return textAt(d, v.typePath)
	}
	return "", nil
}

// eventID reads the event's id where the provider puts it, or derives one
// when the source says so (docs/design.md §2).
func (v *Verifier) eventID(req *Request, m meta, r *docReader, typ string) (id string, derived bool, err error) {
	switch v.keySrc {
	case keyFromMeta:
		if m.idErr == nil {
			return m.id, false, nil
		}
		if !v.derive || !errors.Is(m.idErr, ErrMissingHeader) {
			return "", false, m.idErr
		}
	case keyFromHeader:
		k, err := singleValue(req.Header, v.keyHeader)
		if errors.Is(err, ErrMissingHeader) {
			// The sender's signature was fine; the configured key is not there.
			return "", false, fmt.Errorf("key header %s absent: %w", v.keyHeader, ErrNoKey)
		}
		return k, false, err
	case keyFromBody:
		d, err := r.doc()
		if err != nil {
			return "", false, err
		}
		k, ok, err := keyAt(d, v.keyPath, v.keyNumbers)
		switch {
		case err != nil:
			return "", false, err
		case ok && k != "":
			return k, false, nil
		case !v.derive:
			return "", false, fmt.Errorf("body has no id at %q: %w", strings.Join(v.keyPath, "."), ErrNoKey)
		}
	}
	return v.derivedID(r, typ)
}
