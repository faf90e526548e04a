package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/providerapi"
	"github.com/hookledger/hookledger/webhook"
)

// StripeAPI is Stripe's API base URL.
const StripeAPI = "https://api.stripe.com"

// stripeRetention is how far back List Events reaches.
const stripeRetention = 30 * 24 * time.Hour

// Stripe lists events with List Events (GET /v1/events, newest first,
// following starting_after). By default it asks only for events Stripe
// could not deliver (delivery_success=false); All asks for every event, for
// an endpoint that was disabled (Stripe sends it nothing, so nothing failed).
//
// A rebuilt delivery is the Event object as the API returned it: the same
// event, not the same bytes. The API renders data in the event's
// api_version, which an endpoint may pin otherwise, and pending_webhooks is
// a live counter.
type Stripe struct {
	api *providerapi.Client
	// All lists every event in the window, not only undelivered ones.
	All bool
	// Types keeps only these event types (the endpoint's enabled_events);
	// "prefix.*" matches a family. Empty keeps all.
	Types []string
	// Thin lists thin events (GET /v2/core/events): every one, as that API
	// cannot filter undelivered ones.
	Thin bool
}

// StripeOptions configure NewStripe.
type StripeOptions struct {
	APIKey  string // secret or restricted key (Events: read)
	BaseURL string // default StripeAPI
	// TrustBaseURL allows a BaseURL on another host than StripeAPI's (a
	// proxy, a test stand-in); a loopback host needs none.
	TrustBaseURL bool
	Account      string       // a connected account (Stripe-Account header; Stripe-Context for thin events), optional
	Client       *http.Client // default: 30 s timeout
	All          bool
	Types        []string
	Thin         bool
}

// NewStripe returns Stripe's events API as a Provider.
func NewStripe(o StripeOptions) (*Stripe, error) {
	if o.APIKey == "" {
		return nil, errors.New("stripe: no API key (the credential must be a secret or restricted key with Events read access)")
	}
	if strings.HasPrefix(o.APIKey, "pk_") {
		return nil, errors.New("stripe: the credential is a publishable key (pk_...); List Events needs a secret or restricted key (sk_... or rk_...)")
	}
	if strings.HasPrefix(o.APIKey, "whsec_") {
		return nil, errors.New("stripe: the credential is a webhook signing secret (whsec_...); List Events needs an API key (sk_... or rk_...)")
	}
	base, err := baseURL(o.BaseURL, StripeAPI, o.TrustBaseURL)
	if err != nil {
		return nil, fmt.Errorf("stripe: %w", err)
	}
	for _, t := range o.Types {
		if t == "" || strings.Contains(strings.TrimSuffix(t, "*"), "*") {
			return nil, fmt.Errorf("stripe: type %q: want an event type (invoice.paid) or a family (invoice.*)", t)
		}
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+o.APIKey)
	switch {
	case o.Account != "" && o.Thin:
		h.Set("Stripe-Context", o.Account)
		h.Set("Stripe-Version", thinAPIVersion)
	case o.Account != "":
		h.Set("Stripe-Account", o.Account)
	case o.Thin:
		h.Set("Stripe-Version", thinAPIVersion)
	}
	c := cmp.Or(o.Client, &http.Client{Timeout: 30 * time.Second})
	return &Stripe{api: &providerapi.Client{Provider: "stripe", Base: base, HTTP: c, Header: h, UserAgent: userAgent, Hints: stripeHints}, All: o.All, Types: o.Types, Thin: o.Thin}, nil
}

// Name implements Provider.
func (s *Stripe) Name() string { return "stripe" }

// Scope says which events List is asked for.
func (s *Stripe) Scope() string {
	scope := "the events Stripe could not deliver (delivery_success=false)"
	switch {
	case s.Thin:
		scope = "every thin event (the v2 Events API cannot tell undelivered ones)"
	case s.All:
		scope = "every event"
	}
	if len(s.Types) > 0 {
		scope += " of types " + strings.Join(s.Types, ", ")
	}
	return scope
}

// Retention implements Provider: List Events covers 30 days.
func (s *Stripe) Retention() time.Duration { return stripeRetention }

type stripeList struct {
	Object  string            `json:"object"`
	HasMore bool              `json:"has_more"`
	Data    []json.RawMessage `json:"data"`
}

type stripeEventHead struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
}

// query builds the List Events parameters of one page.
func (s *Stripe) query(since time.Time, after string) url.Values {
	q := url.Values{}
	q.Set("limit", "100")
	q.Set("created[gte]", strconv.FormatInt(since.Unix(), 10))
	if !s.All {
		q.Set("delivery_success", "false")
	}
	s.typesQuery(q)
	if after != "" {
		q.Set("starting_after", after)
	}
	return q
}

// typesQuery asks the API for s.Types: types[N] takes up to 20 exact names;
// families and longer lists are filtered here (wanted).
func (s *Stripe) typesQuery(q url.Values) {
	if len(s.Types) > 20 || slices.ContainsFunc(s.Types, func(t string) bool { return strings.HasSuffix(t, "*") }) {
		return
	}
	for i, t := range s.Types {
		q.Set(fmt.Sprintf("types[%d]", i), t)
	}
}

func (s *Stripe) wanted(typ string) bool {
	if len(s.Types) == 0 {
		return true
	}
	return slices.ContainsFunc(s.Types, func(p string) bool {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			return strings.HasPrefix(typ, prefix)
		}
		return p == typ
	})
}

// List implements Provider.
func (s *Stripe) List(ctx context.Context, since time.Time, fn func(Event) error) error {
	if s.Thin {
		return s.listThin(ctx, since, fn)
	}
	// starting_after is a cursor by object id, not an offset: events
	// created meanwhile never shift the pages to come.
	after := ""
	for {
		prev := after
		var page stripeList
		if _, err := s.api.Get(ctx, "/v1/events?"+s.query(since, after).Encode(), &page); err != nil {
			return err
		}
		if page.Object != "list" {
			return fmt.Errorf("stripe API: want a list object, got %q", page.Object)
		}
		for _, raw := range page.Data {
			var h stripeEventHead
			if err := json.Unmarshal(raw, &h); err != nil || h.ID == "" || h.Object != "event" {
				return fmt.Errorf("stripe API: a listed item is not an event: %.120s", raw)
			}
			after = h.ID
			if !s.wanted(h.Type) {
				continue
			}
			// created[gte] keeps the list inside the window.
			ev := Event{ID: h.ID, Type: h.Type, At: time.Unix(h.Created, 0).UTC(), Failed: !s.All, body: raw}
			if err := fn(ev); err != nil {
				return err
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			return nil
		}
		if after == prev {
			return fmt.Errorf("stripe API: the page after %q starts over at the same event; stopped", prev)
		}
	}
}

// Rebuild implements Provider: the listed Event object is the body.
func (s *Stripe) Rebuild(_ context.Context, ev Event) (Delivery, error) {
	if len(ev.body) == 0 {
		return Delivery{}, fmt.Errorf("stripe event %s: no body listed", ev.ID)
	}
	return Delivery{Message: webhook.Message{ID: ev.ID, Type: ev.Type, Body: ev.body}}, nil
}

// baseURL checks a configured API base URL against def, the provider's
// own. The credential goes there and its answers get signed with the
// tenant's secret, so another host needs trusted, unless it is loopback
// (tests, local stubs). Plain http goes only to a loopback host.
func baseURL(v, def string, trusted bool) (string, error) {
	if v == "" {
		return def, nil
	}
	// Errors name the host at most: the URL may carry credentials.
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "", fmt.Errorf("api_url (%d bytes): want an absolute https URL such as %s", len(v), def)
	case u.User != nil:
		return "", errors.New("api_url has user info (user:password@); the API credential goes in \"credential\"")
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("api_url of %s has a query or fragment; want the API's base, such as %s", u.Host, def)
	}
	local := providerapi.Loopback(u.Hostname())
	if u.Scheme == "http" && !local {
		return "", fmt.Errorf("api_url of %s is plain http, which would send the API credential in clear text; use https (http is allowed only to localhost, 127.0.0.1 or ::1, for local stubs)", u.Host)
	}
	d, _ := url.Parse(def)
	own := u.Scheme == "https" && strings.EqualFold(u.Hostname(), d.Hostname()) && (u.Port() == "" || u.Port() == "443")
	if !own && !local && !trusted {
		hint := "a proxy or test host you run"
		if def == GitHubAPI {
			hint = "GitHub Enterprise Server (https://HOST/api/v3), a proxy or a test host you run"
		}
		return "", fmt.Errorf("api_url of %s is not the provider's API (%s): the API credential would go there, and the events it answers would be signed with the tenant's webhook secret and fed to the pipeline; remove api_url, or, for %s, also set \"trust_api_url\": true (CLI: --trust-api-url)",
			u.Host, d.Host, hint)
	}
	return strings.TrimRight(v, "/"), nil
}

// userAgent is the reconciler's User-Agent.
const userAgent = "hookledger-reconcile"

// APIError is a provider API's refusal.
type APIError = providerapi.APIError

// What to fix when an API refuses the reconciler.
var (
	stripeHints = providerapi.Hints{
		Unauthorized: "the API refused the credential; check the credential reference in the reconcile configuration",
		Forbidden:    "the credential lacks a permission (a restricted key needs Events read)",
		NotFound:     "not found; check the API URL, and that the credential can see it",
	}
	githubHints = providerapi.Hints{
		Unauthorized: stripeHints.Unauthorized,
		Forbidden:    "the credential lacks a permission (the token needs the Webhooks repository or organization permission)",
		NotFound:     "not found; check the hook path (or API URL), and that the credential can see it",
	}
)

// thinAPIVersion is the Stripe-Version of the v2 Events API requests.
const thinAPIVersion = providerapi.StripeAPIVersion

// v2List is a page of a v2 list: data, and the path of the next page.
type v2List struct {
	Data        []json.RawMessage `json:"data"`
	NextPageURL *string           `json:"next_page_url"`
}

type v2EventHead struct {
	ID      string    `json:"id"`
	Object  string    `json:"object"`
	Type    string    `json:"type"`
	Created time.Time `json:"created"`
}

// listThin lists thin events with the v2 List Events (GET /v2/core/events),
// newest first, following next_page_url. A listed event is the full event,
// which package stripe reads as it reads a notification.
func (s *Stripe) listThin(ctx context.Context, since time.Time, fn func(Event) error) error {
	q := url.Values{}
	q.Set("created[gte]", strconv.FormatInt(since.Unix(), 10))
	s.typesQuery(q)
	next := "/v2/core/events?" + q.Encode()
	seen := map[string]bool{}
	for next != "" {
		if seen[next] {
			return fmt.Errorf("stripe API: next_page_url %q repeats a page; stopped", providerapi.RedactURL(next))
		}
		seen[next] = true
		var page v2List
		if _, err := s.api.Get(ctx, next, &page); err != nil {
			return err
		}
		for _, raw := range page.Data {
			var h v2EventHead
			if err := json.Unmarshal(raw, &h); err != nil || h.ID == "" || h.Object != providerapi.StripeThinObject {
				return fmt.Errorf("stripe API: a listed item is not a v2 event: %.120s", raw)
			}
			if !s.wanted(h.Type) {
				continue
			}
			if err := fn(Event{ID: h.ID, Type: h.Type, At: h.Created.UTC(), body: raw}); err != nil {
				return err
			}
		}
		next = ""
		if page.NextPageURL != nil && *page.NextPageURL != "" {
			n := *page.NextPageURL
			// A path on the same API, never a URL elsewhere: the key goes with it.
			if !strings.HasPrefix(n, "/v2/core/events?") {
				return fmt.Errorf("stripe API: next_page_url %q is not a page of /v2/core/events", providerapi.RedactURL(n))
			}
			next = n
		}
	}
	return nil
}
