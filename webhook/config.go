package webhook

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

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

// Config configures one source (one sender). JSON-decodable.
type Config struct {
	Provider  string `json:"provider"`             // one of Providers()
	Tolerance string `json:"tolerance,omitempty"`  // Go duration; "" = the provider's default (docs/providers.md); ignored without timestamps
	KeyHeader string `json:"key_header,omitempty"` // override: take the key from this header
	KeyPath   string `json:"key_path,omitempty"`   // override: take the key from this dotted JSON path in the body, e.g. "data.object.id"
	TypePath  string `json:"type_path,omitempty"`  // override: event type from this dotted JSON path
	// VolatileFields are dotted JSON paths removed before deriving a key.
	// nil means the provider's default list (Zoom: event_ts and
	// download_token); any list given, even an empty one, replaces it.
	VolatileFields []string `json:"volatile_fields,omitempty"`
	// URL is the URL the sender signs (twilio, square), exactly as
	// configured at the provider. "" means Request.URL; set it when a
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

// providerSpec registers one provider: its default tolerance (0: no
// timestamp), the volatile fields of its derived keys, and its build.
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
	providerStripe: stripeSpec,
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
	return slices.Sorted(maps.Keys(registry))
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
