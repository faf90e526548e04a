package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Sentinel errors. Every error from Verify wraps exactly one of them, with
// detail added by fmt.Errorf (a failure after a valid signature also wraps
// ErrNoKey); callers branch with errors.Is.
var (
	// ErrMissingHeader means a signature, timestamp or id header is absent.
	ErrMissingHeader = errors.New("missing header")
	// ErrMalformedHeader means a header is present but cannot be parsed.
	ErrMalformedHeader = errors.New("malformed header")
	// ErrRepeatedHeader means a header the scheme reads once (a signature,
	// timestamp, id or type header) came more than once: as two header
	// lines, as the comma-joined value a gateway makes of them, or under
	// two spellings with different values. The error is a
	// *RepeatedHeaderError naming the header.
	ErrRepeatedHeader = errors.New("repeated header")
	// ErrBadSignature means no signature in the request matched any secret.
	ErrBadSignature = errors.New("bad signature")
	// ErrOutsideTolerance means the signed timestamp is too old or too far in
	// the future.
	ErrOutsideTolerance = errors.New("timestamp outside tolerance")
	// ErrMalformedBody means the scheme needs a JSON body and the body is not.
	ErrMalformedBody = errors.New("malformed body")
	// ErrNoKey means the delivery's signature is valid but it carries no
	// idempotency key and none can be derived. Only failures after the
	// signature checked out wrap it (some together with ErrMalformedBody).
	ErrNoKey = errors.New("no idempotency key")
	// ErrNoSecret means no usable secret was given. It is a configuration
	// issue, but the delivery is never accepted.
	ErrNoSecret = errors.New("no secret")
)

// RepeatedHeaderError is the ErrRepeatedHeader of one header.
type RepeatedHeaderError struct {
	Header string // the header's name, as the scheme spells it (X-GitHub-Delivery)
	Detail string // how it was repeated, for logs
}

func (e *RepeatedHeaderError) Error() string {
	if e.Detail == "" {
		return e.Header + ": " + ErrRepeatedHeader.Error()
	}
	return e.Header + ": " + e.Detail + ": " + ErrRepeatedHeader.Error()
}

// Unwrap makes errors.Is(err, ErrRepeatedHeader) hold.
func (e *RepeatedHeaderError) Unwrap() error { return ErrRepeatedHeader }

// Provider names accepted in Config.Provider.
const (
	providerStripe   = "stripe"
	providerGitHub   = "github"
	providerStandard = "standard-webhooks"
	providerSvix     = "svix"
	providerGeneric  = "generic"
	providerSlack    = "slack"
	providerSquare   = "square"
	providerPaddle   = "paddle"
	providerTwilio   = "twilio"
	providerLinear   = "linear"
	providerZoom     = "zoom"
	providerTwitch   = "twitch"
	providerIntercom = "intercom"
	providerGitLab   = "gitlab"
	providerShopify  = "shopify"
)

// defaultTolerance is the documented default of Stripe and Standard Webhooks
// (5 minutes), also used by the generic scheme when it has a timestamp.
const defaultTolerance = 5 * time.Minute

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
	ID       string     // idempotency key: the provider's event/delivery id, or a derived key
	Type      string     // provider event type ("" when the scheme has none)
	Derived   bool       // Key was derived (docs/design.md §2), not given by the provider
	Handshake *Handshake // non-nil: answer this and touch nothing (Slack url_verification, Zoom endpoint.url_validation, Twitch webhook_callback_verification, Intercom ping); Key is then ""
}

// Handshake is a reply sent as is, without touching the ledger.
type Handshake struct {
	Status      int
	ContentType string
	Body        []byte
}

// Message is what Sign needs to produce a sender's headers.
type Message struct {
	ID   string // event/delivery id for schemes that carry it in a header (GitHub X-GitHub-Delivery, Standard Webhooks webhook-id, Linear-Delivery, Twitch message id, GitLab Idempotency-Key, Shopify event id, Twilio idempotency token); ignored where the id is in the body (Stripe, Slack, Square, Paddle, Intercom)
	Type string // event type for schemes that carry it in a header (GitHub X-GitHub-Event, Linear-Event, Twitch subscription type, GitLab X-Gitlab-Event, Shopify topic)
	Body []byte
	URL  string    // the URL the sender posts to, for the schemes that sign it (twilio, square)
	Now  time.Time // the send time, for the schemes that sign a timestamp
}

// Config configures one source (one sender). JSON-decodable.
type Config struct {
	Provider  string `json:"provider"`             // one of Providers()
	Tolerance string `json:"tolerance,omitempty"`  // Go duration; "" = the provider's documented default (see docs/providers.md: Stripe, Standard Webhooks, Slack 5m; Twitch 10m; Linear 1m; Paddle 5s); ignored by schemes without timestamps
	KeyHeader string `json:"key_header,omitempty"` // override: take the key from this header
	KeyPath   string `json:"key_path,omitempty"`   // override: take the key from this dotted JSON path in the body, e.g. "data.object.id"
	TypePath  string `json:"type_path,omitempty"`  // override: event type from this dotted JSON path
	// VolatileFields are dotted JSON paths removed before deriving a key.
	// nil (absent) means the provider's default list (Zoom: event_ts and
	// download_token; none for the others); any list given, even an empty
	// one, replaces it.
	VolatileFields []string `json:"volatile_fields,omitempty"`
	// URL is the URL the sender signs, for the providers that sign it
	// (twilio, square): the notification URL exactly as configured at the
	// provider. "" means Request.URL, the URL the receiver saw; set it when a
	// proxy, custom domain or stage path makes the two differ.
	URL     string         `json:"url,omitempty"`
	Generic *GenericConfig `json:"generic,omitempty"`
}

// GenericConfig is a configurable HMAC scheme.
type GenericConfig struct {
	Algorithm       string `json:"algorithm,omitempty"`        // sha1 | sha256 (default) | sha512
	SignatureHeader string `json:"signature_header,omitempty"` // default "X-Signature"
	Prefix          string `json:"prefix,omitempty"`           // e.g. "sha256=" (stripped before decoding)
	Encoding        string `json:"encoding,omitempty"`         // hex (default; either case) | base64 (standard, padded, canonical)
	TimestampHeader string `json:"timestamp_header,omitempty"` // if set, signed content is timestamp + "." + body and tolerance applies (unix seconds)
	IDHeader        string `json:"id_header,omitempty"`        // header carrying the event id, if any; a comma in it is read as a repeated header
	TypeHeader      string `json:"type_header,omitempty"`      // header carrying the event type, if any; likewise
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
	// (form-encoded bodies, JSON it had to read); hasDoc says it is set.
	// docJSON is the JSON text doc was decoded from (the body, or a form
	// field holding JSON), nil when doc is a form's fields.
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

// providerSpec registers one provider: its documented default tolerance
// (0: the scheme has no timestamp), the volatile fields of its derived keys,
// and how to build its scheme and key and type sources.
type providerSpec struct {
	tolerance time.Duration
	volatile  []string
	build     func(cfg Config, tol time.Duration) (providerSetup, error)
}

// providerSetup is what a providerSpec builds.
type providerSetup struct {
	scheme    scheme
	keySrc    keySource
	keyPath   []string
	derive    bool
	rawDerive bool
	typeSrc   typeSource
	typePath  []string
}

// registry maps Config.Provider to its spec.
var registry = map[string]providerSpec{
	providerStripe: {tolerance: defaultTolerance, build: func(_ Config, tol time.Duration) (providerSetup, error) {
		return providerSetup{scheme: stripeScheme{tolerance: tol}, keySrc: keyFromBody, keyPath: []string{"id"}, typeSrc: typeFromBody, typePath: []string{"type"}}, nil
	}},
	providerGitHub: {build: func(Config, time.Duration) (providerSetup, error) {
		return providerSetup{scheme: githubScheme{}, keySrc: keyFromMeta, typeSrc: typeFromMeta}, nil
	}},
	providerStandard: {tolerance: defaultTolerance, build: func(_ Config, tol time.Duration) (providerSetup, error) {
		return providerSetup{scheme: standardScheme{tolerance: tol}, keySrc: keyFromMeta, typeSrc: typeFromBodySoft, typePath: []string{"type"}}, nil
	}},
	providerSvix: {tolerance: defaultTolerance, build: func(_ Config, tol time.Duration) (providerSetup, error) {
		return providerSetup{scheme: standardScheme{tolerance: tol, svix: true}, keySrc: keyFromMeta, typeSrc: typeFromBodySoft, typePath: []string{"type"}}, nil
	}},
	providerGeneric: {tolerance: defaultTolerance, build: func(cfg Config, tol time.Duration) (providerSetup, error) {
		g, err := newGenericScheme(cfg.Generic, tol)
		if err != nil {
			return providerSetup{}, err
		}
		s := providerSetup{scheme: g, keySrc: keyDerived, rawDerive: true}
		if g.idHeader != "" {
			s.keySrc = keyFromMeta
		}
		if g.typeHeader != "" {
			s.typeSrc = typeFromMeta
		}
		return s, nil
	}},
	providerSlack:    slackSpec,
	providerSquare:   squareSpec,
	providerPaddle:   paddleSpec,
	providerTwilio:   twilioSpec,
	providerLinear:   linearSpec,
	providerZoom:     zoomSpec,
	providerTwitch:   twitchSpec,
	providerIntercom: intercomSpec,
	providerGitLab:   gitlabSpec,
	providerShopify:  shopifySpec,
}

// Providers returns the accepted Config.Provider names, sorted.
func Providers() []string {
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// New validates cfg and returns a Verifier for it. An unknown provider or a bad
// option yields an error naming the field and the allowed values.
func New(cfg Config) (*Verifier, error) {
	spec, ok := registry[cfg.Provider]
	if !ok {
		return nil, fmt.Errorf("webhook config: provider %q unknown; allowed: %s", cfg.Provider, strings.Join(Providers(), ", "))
	}
	if cfg.Generic != nil && cfg.Provider != providerGeneric {
		return nil, fmt.Errorf("webhook config: generic is only allowed with provider %q, not %q", providerGeneric, cfg.Provider)
	}
	tol := spec.tolerance
	if cfg.Tolerance != "" {
		d, err := time.ParseDuration(cfg.Tolerance)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("webhook config: tolerance %q: want a positive Go duration such as \"5m\"", cfg.Tolerance)
		}
		tol = d
	}
	if cfg.URL != "" {
		if !signsURL(cfg.Provider) {
			return nil, fmt.Errorf("webhook config: url is set, but %s does not sign the URL, so it would be ignored: remove it (only twilio and square use it)", cfg.Provider)
		}
		if strings.Contains(cfg.URL, "{") {
			return nil, errors.New("webhook config: url has a placeholder ({...}); the receiver's sources config fills {source} and {tenant} per tenant, anything else takes the URL as configured at the provider")
		}
		if u, err := url.Parse(cfg.URL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			// Not quoted: a URL may carry credentials (https://user:pass@...).
			return nil, errors.New("webhook config: url: want an absolute http(s) URL such as \"https://hooks.example.com/webhooks/src/tenant\"")
		}
	}
	s, err := spec.build(cfg, tol)
	if err != nil {
		return nil, err
	}
	v := &Verifier{
		provider: cfg.Provider, scheme: s.scheme,
		keySrc: s.keySrc, keyPath: s.keyPath, derive: s.derive, rawDerive: s.rawDerive,
		typeSrc: s.typeSrc, typePath: s.typePath,
	}
	if cfg.KeyHeader != "" && cfg.KeyPath != "" {
		return nil, errors.New("webhook config: key_header and key_path are exclusive; set one")
	}
	if cfg.KeyHeader != "" {
		if !validHeaderName(cfg.KeyHeader) {
			return nil, fmt.Errorf("webhook config: key_header %q is not a valid header name", cfg.KeyHeader)
		}
		v.keySrc, v.keyHeader, v.derive = keyFromHeader, cfg.KeyHeader, false
	}
	if cfg.KeyPath != "" {
		p, err := parsePath(cfg.KeyPath)
		if err != nil {
			return nil, fmt.Errorf("webhook config: key_path: %w", err)
		}
		v.keySrc, v.keyPath, v.keyNumbers, v.derive = keyFromBody, p, true, false
	}
	if cfg.TypePath != "" {
		p, err := parsePath(cfg.TypePath)
		if err != nil {
			return nil, fmt.Errorf("webhook config: type_path: %w", err)
		}
		v.typeSrc, v.typePath = typeFromBody, p
	}
	volatile := spec.volatile
	if cfg.VolatileFields != nil {
		volatile = cfg.VolatileFields
	}
	for i, f := range volatile {
		p, err := parsePath(f)
		if err != nil {
			return nil, fmt.Errorf("webhook config: volatile_fields[%d]: %w", i, err)
		}
		v.volatile = append(v.volatile, p)
	}
	return v, nil
}

// signsURL reports whether the provider signs the URL it posts to, the
// only use of Config.URL.
func signsURL(provider string) bool { return provider == providerTwilio || provider == providerSquare }

// SignsURL reports whether the provider signs the URL it posts to: then
// Config.URL, when set, must be the URL as configured at the provider.
func SignsURL(provider string) bool { return signsURL(provider) }

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

// Sign returns every header a real sender would send with m.Body: the
// signature, timestamp, id and type headers where the scheme has them, and
// Content-Type. It needs m.ID where the scheme carries the id in a header
// (github, standard-webhooks, svix, generic with IDHeader), m.Type for github,
// and m.Now where the scheme signs a timestamp. It exists for tests and local
// runs.
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

// extract finds the key and type of an authenticated request, or returns
// its handshake.
func (v *Verifier) extract(req *Request, m meta) (Event, error) {
	if m.handshake != nil {
		return Event{Handshake: m.handshake}, nil
	}
	var b body
	b.raw = req.Body
	if m.hasDoc {
		b.doc, b.src, b.parsed = m.doc, m.docJSON, true
	}
	// The members the key and type are read from, checked once for copies
	// on the first read of the document.
	var paths [][]string
	if v.typeSrc == typeFromBody || v.typeSrc == typeFromBodySoft {
		paths = append(paths, v.typePath)
	}
	if v.keySrc == keyFromBody {
		paths = append(paths, v.keyPath)
	}
	checked := false
	readDoc := func() (any, error) {
		d, err := b.json()
		if err == nil && !checked {
			checked = true
			err = uniqueAt(b.src, paths...)
		}
		return d, err
	}

	var ev Event
	switch v.typeSrc {
	case typeFromMeta:
		// A type header is optional; only an ambiguous one is refused.
		if m.typErr != nil && !errors.Is(m.typErr, ErrMissingHeader) {
			return Event{}, m.typErr
		}
		ev.Type = m.typ
	case typeFromBody:
		d, err := readDoc()
		if err != nil {
			return Event{}, err
		}
		if ev.Type, err = textAt(d, v.typePath); err != nil {
			return Event{}, err
		}
	case typeFromBodySoft:
		// A body that is not JSON has no type; one that is has it right.
		if _, err := b.json(); err == nil {
			d, err := readDoc()
			if err == nil {
				ev.Type, err = textAt(d, v.typePath)
			}
			if err != nil {
				return Event{}, err
			}
		}
	}

	derive := false
	switch v.keySrc {
	case keyFromMeta:
		switch {
		case m.idErr == nil:
			ev.ID = m.id
		case v.derive && errors.Is(m.idErr, ErrMissingHeader):
			derive = true
		default:
			return Event{}, m.idErr
		}
	case keyFromHeader:
		k, err := singleValue(req.Header, v.keyHeader)
		if errors.Is(err, ErrMissingHeader) {
			// The sender's signature was fine; the configured key is not there.
			return Event{}, fmt.Errorf("key header %s absent: %w", v.keyHeader, ErrNoKey)
		}
		if err != nil {
			return Event{}, err
		}
		ev.ID = k
	case keyFromBody:
		d, err := readDoc()
		if err != nil {
			return Event{}, err
		}
		k, ok, err := keyAt(d, v.keyPath, v.keyNumbers)
		if err != nil {
			return Event{}, err
		}
		switch {
		case ok && k != "":
			ev.ID = k
		case v.derive:
			derive = true
		default:
			return Event{}, fmt.Errorf("body has no id at %q: %w", strings.Join(v.keyPath, "."), ErrNoKey)
		}
	case keyDerived:
		derive = true
	}
	if derive {
		doc, err := b.json()
		if err != nil && v.rawDerive && len(b.raw) > 0 {
			// No volatile field can be removed from a body that is not
			// JSON, so its raw digest is as stable as the sender's bytes.
			ev.ID, ev.Derived = deriveRawKey(ev.Type, b.raw), true
			return ev, nil
		}
		if err != nil {
			return Event{}, fmt.Errorf("derive key: body is not JSON: %w", ErrNoKey)
		}
		// Every member decides a derived key, so none may come twice.
		if err := uniqueAll(b.src); err != nil {
			return Event{}, err
		}
		k, err := deriveKey(ev.Type, doc, v.volatile)
		if err != nil {
			return Event{}, err
		}
		ev.ID, ev.Derived = k, true
	}
	if ev.ID == "" {
		return Event{}, ErrNoKey
	}
	if len(ev.ID) > maxKeyLen {
		return Event{}, fmt.Errorf("key is %d bytes, limit %d: %w", len(ev.ID), maxKeyLen, ErrNoKey)
	}
	return ev, nil
}

// NewUnsigned returns a Verifier that only reads keys and types, for a
// source whose deliveries carry no signature because the channel they come
// through authenticated them (an EventBridge bus, whose IAM policy decides
// who may put events on it). cfg.Provider is a provider whose key and type
// rules apply (Stripe: the body's id and type), or "" for none: then the key
// and type are the ones the channel gives (Unsigned's id and typ) unless
// KeyPath and TypePath say otherwise. Its Verify and Sign always fail: such
// a source has no HTTP door.
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

// Unsigned reads the key and type of a body that arrived without a
// signature (see NewUnsigned), by the rules Verify applies after a valid
// signature, with the same refusals. id and typ are what the channel says
// about the event (EventBridge's event id and detail-type): the key and
// type of a source without rules of its own. Errors wrap ErrNoKey.
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
