package stripe

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/providerapi"
)

// API is Stripe's API base URL.
const API = "https://api.stripe.com"

// DefaultAPIVersion is the Stripe-Version a Fetcher sends unless told
// otherwise. It decides the shape of what a fetch returns: pin the one your
// handlers are written for.
const DefaultAPIVersion = providerapi.StripeAPIVersion

// DefaultTimeout bounds one request of a Fetcher without its own Client.
const DefaultTimeout = 10 * time.Second

// Options configure NewFetcher.
type Options struct {
	// Key is the secret or restricted API key (sk_..., rk_...) of every
	// tenant Keys does not list: one account's, or a Connect platform's
	// (which reads a connected account's data through the event's context).
	// Read it from a secret reference (docs/eventbridge.md).
	Key string
	// Keys are per-tenant keys, for tenants that are separate accounts.
	Keys map[string]string
	// APIVersion is the Stripe-Version sent (default DefaultAPIVersion).
	APIVersion string
	// BaseURL is Stripe's API (default API). The key goes there: another
	// host needs TrustBaseURL, and plain http only goes to loopback.
	BaseURL      string
	TrustBaseURL bool
	Client       *http.Client // default: DefaultTimeout
}

// Fetcher fetches what thin events point at, with the tenant's key. Safe for concurrent use.
type Fetcher struct {
	key  *providerapi.Client            // Options.Key's; nil without one
	keys map[string]*providerapi.Client // per tenant
}

// NewFetcher checks o and returns a Fetcher. A key that cannot call the API
// (publishable, a signing secret) is refused here, not on every event.
func NewFetcher(o Options) (*Fetcher, error) {
	if o.Key == "" && len(o.Keys) == 0 {
		return nil, errors.New("stripe: NewFetcher: no API key (Options.Key, or Options.Keys per tenant)")
	}
	base, err := baseURL(o.BaseURL, o.TrustBaseURL)
	if err != nil {
		return nil, err
	}
	c := cmp.Or(o.Client, &http.Client{Timeout: DefaultTimeout})
	version := cmp.Or(o.APIVersion, DefaultAPIVersion)
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
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] == 0x7f {
			// A header cannot carry it: every fetch would fail.
			return fmt.Errorf("the API key has a control character (0x%02x) at byte %d (a newline, when it was stored from a file); store the key alone", k[i], i)
		}
	}
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

// baseURL checks Options.BaseURL. Its errors name the host at most: the
// URL may come from a secret store, with credentials in it.
func baseURL(v string, trusted bool) (string, error) {
	if v == "" {
		return API, nil
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "", fmt.Errorf("stripe: BaseURL (%d bytes) is not an absolute https URL such as %s", len(v), API)
	case u.User != nil:
		return "", errors.New("stripe: BaseURL has user info (user:password@); the API key goes in Options.Key")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("stripe: BaseURL of %s has a query or fragment; want the API's base, such as %s", u.Host, API)
	}
	local := providerapi.Loopback(u.Hostname())
	if u.Scheme == "http" && !local {
		return "", fmt.Errorf("stripe: BaseURL of %s is plain http, which would send the API key in clear text; use https (http only to localhost, for a local stand-in)", u.Host)
	}
	if !local && !trusted && !(u.Scheme == "https" && strings.EqualFold(u.Hostname(), "api.stripe.com")) {
		return "", fmt.Errorf("stripe: BaseURL of %s is not Stripe's API: the tenants' keys would go there; remove it, or set TrustBaseURL for a proxy you run", u.Host)
	}
	return strings.TrimRight(v, "/"), nil
}

// FetchEvent fetches a thin notification's full event (GET /v2/core/events/{id}, 30 days).
func (f *Fetcher) FetchEvent(ctx context.Context, ev *hookledger.Event) (json.RawMessage, error) {
	t, err := Parse(ev)
	if err != nil {
		return nil, err
	}
	return f.get(ctx, ev.Tenant, t, "/v2/core/events/"+url.PathEscape(t.ID))
}

// FetchObject fetches the current state of the thin event's related object
// as JSON (GET related_object.url); without one, a permanent error.
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
	if !apiPath(ro.URL) {
		return nil, hookledger.Permanent(fmt.Errorf("stripe: thin event %s: related_object.url %q is not a path of Stripe's API (/v1/... or /v2/..., no query)", t.ID, ro.URL))
	}
	return f.get(ctx, ev.Tenant, t, ro.URL)
}

var (
	// stripeID is the alphabet of Stripe's ids (evt_..., acct_...).
	stripeID = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	// stripeContext is a thin event's context: account ids joined by "/".
	stripeContext = regexp.MustCompile(`^[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*$`)
	// apiSegments is /v1 or /v2 and path segments of ids and names.
	apiSegments = regexp.MustCompile(`^/v[12](/[A-Za-z0-9_.-]+)+$`)
)

// apiPath reports whether p is a path of Stripe's API as it stands: it
// parses to itself (no query, no escapes, no host), cleaning leaves it
// alone (no "..", "//" or trailing "/"), and its segments are plain.
func apiPath(p string) bool {
	u, err := url.Parse(p)
	return err == nil && u.Path == p && !u.ForceQuery && path.Clean(p) == p && apiSegments.MatchString(p)
}

func (f *Fetcher) get(ctx context.Context, tenant string, t Thin, route string) (json.RawMessage, error) {
	api, ok := f.keys[tenant]
	if !ok {
		api = f.key
	}
	if api == nil {
		return nil, hookledger.Permanent(fmt.Errorf("stripe: no API key for tenant %q (Options.Keys lists others, and Options.Key is empty)", tenant))
	}
	// Both go in headers: anything else would fail every retry alike.
	if !stripeID.MatchString(t.ID) {
		return nil, hookledger.Permanent(fmt.Errorf("stripe: thin event id %q is not a Stripe id (letters, digits, _)", t.ID))
	}
	if t.Context != "" && !stripeContext.MatchString(t.Context) {
		return nil, hookledger.Permanent(fmt.Errorf("stripe: thin event %s: context %q is not Stripe account ids joined by /", t.ID, t.Context))
	}
	h := http.Header{}
	if t.Context != "" {
		h.Set("Stripe-Context", t.Context)
	}
	h.Set("Stripe-Request-Trigger", "event="+t.ID)
	var out json.RawMessage
	if _, err := api.Request(ctx, http.MethodGet, route, h, &out); err != nil {
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
