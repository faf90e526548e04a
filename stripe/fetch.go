package stripe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/providerapi"
)

// API is Stripe's API base URL.
const API = "https://api.stripe.com"

// DefaultAPIVersion is the Stripe-Version a Fetcher sends unless told
// otherwise: the version of Stripe's Go library this was written against.
// It decides the shape of the objects a fetch returns; pin the one your
// handlers are written for.
const DefaultAPIVersion = providerapi.StripeAPIVersion

// DefaultTimeout bounds one request of a Fetcher without its own Client.
const DefaultTimeout = 10 * time.Second

// Options configure NewFetcher.
type Options struct {
	// Key is the secret or restricted API key (sk_..., rk_...) of every
	// tenant Keys does not list: one account's, or a Connect platform's,
	// which reads a connected account's data through the thin event's
	// context. Read it from an effect setting that is a secret reference
	// (docs/eventbridge.md, "The tenant's API key").
	Key string
	// Keys are per-tenant API keys, for tenants that are separate Stripe
	// accounts.
	Keys map[string]string
	// APIVersion is the Stripe-Version sent (default DefaultAPIVersion).
	APIVersion string
	// BaseURL is Stripe's API (default API). Another host needs
	// TrustBaseURL; plain http is allowed only to a loopback host (a local
	// stand-in), since the key goes with every request.
	BaseURL      string
	TrustBaseURL bool
	Client       *http.Client // default: DefaultTimeout
}

// Fetcher fetches what thin events point at from Stripe's API, with the
// tenant's key, retrying throttling and server errors as Stripe asks (the
// reconciler's rules: Retry-After honoured in full, backoff with jitter,
// never past the context's deadline). Safe for concurrent use.
type Fetcher struct {
	key  *providerapi.Client            // Options.Key's; nil without one
	keys map[string]*providerapi.Client // per tenant
}

// NewFetcher checks o and returns a Fetcher. A key that cannot call the API
// (a publishable key, a webhook signing secret) is refused here, at cold
// start, rather than on every event.
func NewFetcher(o Options) (*Fetcher, error) {
	if o.Key == "" && len(o.Keys) == 0 {
		return nil, errors.New("stripe: NewFetcher: no API key (Options.Key, or Options.Keys per tenant)")
	}
	base, err := baseURL(o.BaseURL, o.TrustBaseURL)
	if err != nil {
		return nil, err
	}
	c := o.Client
	if c == nil {
		c = &http.Client{Timeout: DefaultTimeout}
	}
	version := o.APIVersion
	if version == "" {
		version = DefaultAPIVersion
	}
	// One client per key: each keeps its own quota (a rate-limit answer
	// makes that key's next request wait, not another account's).
	client := func(key string) *providerapi.Client {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+key)
		h.Set("Stripe-Version", version)
		return &providerapi.Client{Provider: "stripe", Base: base, HTTP: c, Header: h, UserAgent: "hookledger-stripe", Hints: fetchHints}
	}
	f := &Fetcher{keys: map[string]*providerapi.Client{}}
	for tenant, k := range o.Keys {
		if err := checkKey(k); err != nil {
			return nil, fmt.Errorf("stripe: tenant %q: %w", tenant, err)
		}
		f.keys[tenant] = client(k)
	}
	if o.Key != "" {
		if err := checkKey(o.Key); err != nil {
			return nil, fmt.Errorf("stripe: %w", err)
		}
		f.key = client(o.Key)
	}
	return f, nil
}

// fetchHints say what to fix when Stripe refuses a fetch.
var fetchHints = providerapi.Hints{
	Unauthorized: "Stripe refused the tenant's API key; check the effect setting it comes from",
	Forbidden:    "the tenant's API key lacks a permission: a restricted key needs read access to events and to the objects fetched",
	NotFound:     "not found: the event is older than 30 days, or belongs to another account (its context) than the key's",
}

func checkKey(k string) error {
	switch {
	case strings.HasPrefix(k, "pk_"):
		return errors.New("the API key is a publishable key (pk_...); fetching needs a secret or restricted key (sk_... or rk_...)")
	case strings.HasPrefix(k, "whsec_"):
		return errors.New("the API key is a webhook signing secret (whsec_...); fetching needs an API key (sk_... or rk_...)")
	case strings.TrimSpace(k) == "":
		return errors.New("the API key is empty")
	}
	return nil
}

func baseURL(v string, trusted bool) (string, error) {
	if v == "" {
		return API, nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		return "", fmt.Errorf("stripe: BaseURL %q: want an absolute https URL such as %s", v, API)
	}
	local := providerapi.Loopback(u.Hostname())
	if u.Scheme == "http" && !local {
		return "", fmt.Errorf("stripe: BaseURL %q: plain http would send the API key in clear text; use https (http only to localhost, for a local stand-in)", v)
	}
	if !local && !trusted && !(u.Scheme == "https" && strings.EqualFold(u.Hostname(), "api.stripe.com")) {
		return "", fmt.Errorf("stripe: BaseURL %q is not Stripe's API: the tenants' keys would go there; remove it, or set TrustBaseURL for a proxy you run", v)
	}
	return strings.TrimRight(v, "/"), nil
}

// FetchEvent fetches the full event of a thin notification (GET
// /v2/core/events/{id}, within 30 days of it), with its data and changes,
// as JSON.
func (f *Fetcher) FetchEvent(ctx context.Context, ev *hookledger.Event) (json.RawMessage, error) {
	t, err := Parse(ev)
	if err != nil {
		return nil, err
	}
	return f.get(ctx, ev.Tenant, t, "/v2/core/events/"+url.PathEscape(t.ID))
}

// FetchObject fetches the current state of the thin event's related
// object (GET related_object.url) as JSON. An event without one is a
// permanent error.
func (f *Fetcher) FetchObject(ctx context.Context, ev *hookledger.Event) (json.RawMessage, error) {
	t, err := Parse(ev)
	if err != nil {
		return nil, err
	}
	ro := t.RelatedObject
	if ro == nil || ro.URL == "" {
		return nil, hookledger.Permanent(fmt.Errorf("stripe: thin event %s (%s) has no related object to fetch; use FetchEvent", t.ID, t.Type))
	}
	// A path on Stripe's API, never a URL elsewhere: the key goes with it.
	if !strings.HasPrefix(ro.URL, "/v1/") && !strings.HasPrefix(ro.URL, "/v2/") || strings.ContainsAny(ro.URL, "\\#") || strings.Contains(ro.URL, "..") {
		return nil, hookledger.Permanent(fmt.Errorf("stripe: thin event %s: related_object.url %q is not a path of Stripe's API", t.ID, ro.URL))
	}
	return f.get(ctx, ev.Tenant, t, ro.URL)
}

func (f *Fetcher) get(ctx context.Context, tenant string, t Thin, path string) (json.RawMessage, error) {
	api, ok := f.keys[tenant]
	if !ok {
		api = f.key
	}
	if api == nil {
		return nil, hookledger.Permanent(fmt.Errorf("stripe: no API key for tenant %q (Options.Keys lists others, and Options.Key is empty)", tenant))
	}
	h := http.Header{}
	if t.Context != "" {
		h.Set("Stripe-Context", t.Context)
	}
	h.Set("Stripe-Request-Trigger", "event="+t.ID)
	var out json.RawMessage
	if _, err := api.Request(ctx, http.MethodGet, path, h, &out); err != nil {
		var ae *providerapi.APIError
		if errors.As(err, &ae) && !ae.RateLimited && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden || ae.Status == http.StatusNotFound) {
			// No retry makes a refused key or a missing object appear;
			// the event goes dead, alarmed, for a replay once fixed.
			return nil, hookledger.Permanent(fmt.Errorf("stripe: fetch for thin event %s: %w", t.ID, err))
		}
		return nil, fmt.Errorf("stripe: fetch for thin event %s: %w", t.ID, err)
	}
	return out, nil
}
