package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/jsoncheck"
)

// Spec is one reconciliation: a source and tenant and how to reach its
// provider's API (HOOKLEDGER_RECONCILE holds a JSON array; the CLI's flags).
type Spec struct {
	Source string `json:"source"`
	Tenant string `json:"tenant"`
	// Credential is a secret reference to the provider API credential: a
	// Stripe key with Events read, a GitHub token with Webhooks read.
	Credential string `json:"credential"`
	// APIURL overrides the provider's API base URL. The credential goes
	// there and its answers get signed, so a host other than the
	// provider's own API or a loopback stub needs TrustAPIURL.
	APIURL string `json:"api_url,omitempty"`
	// TrustAPIURL vouches for APIURL (GitHub Enterprise Server's
	// https://HOST/api/v3, a proxy, a test stand-in).
	TrustAPIURL bool `json:"trust_api_url,omitempty"`
	// Window is how far back to look (Go duration); default: as far as the
	// provider keeps events, within the ledger's retention.
	Window string `json:"window,omitempty"`
	MinAge string `json:"min_age,omitempty"` // younger events are left to the sender (DefaultMinAge)
	// Stripe: All lists every event in the window, not only those Stripe
	// could not deliver; Types keeps only these types (the endpoint's
	// enabled events; "invoice.*" matches a family); Account is a connected
	// account (Stripe-Account).
	All     bool     `json:"all,omitempty"`
	Types   []string `json:"types,omitempty"`
	Account string   `json:"account,omitempty"`
	// Stripe: Thin lists thin events (GET /v2/core/events). That API
	// cannot filter undelivered events, so all is implied; Types narrows.
	Thin bool `json:"thin,omitempty"`
	// GitHub: Hook is the webhook's API path, repos/OWNER/REPO/hooks/ID or
	// orgs/ORG/hooks/ID; Redeliver asks GitHub to deliver missing events
	// again instead of feeding rebuilt ones.
	Hook      string `json:"hook,omitempty"`
	Redeliver bool   `json:"redeliver,omitempty"`
}

// DefaultMinAge is how young an event may be before reconcile judges it.
const DefaultMinAge = 10 * time.Minute

// ParseSpecs reads HOOKLEDGER_RECONCILE: a JSON array of Spec. Unknown
// fields, a key given twice and anything after the array are errors.
func ParseSpecs(data []byte) ([]Spec, error) {
	if err := jsoncheck.Strict(data); err != nil {
		return nil, fmt.Errorf("reconcile config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var specs []Spec
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("reconcile config: %w (want [{\"source\": \"stripe\", \"tenant\": \"acme\", \"credential\": \"ssm:/hookledger/acme/stripe-api-key\"}, ...]; see docs/reconcile.md)", err)
	}
	return specs, nil
}

// Providers are the provider schemes reconcile can ask.
var Providers = []string{"stripe", "github"}

// Config is what building jobs needs: the sources and the credential resolver.
type Config struct {
	Sources   map[string]source.Source
	Registry  *source.Registry
	Secrets   *source.Secrets // resolves Spec.Credential
	Retention time.Duration   // the ledger's
	Client    *http.Client    // for provider APIs (default: 30 s timeout)
	// CredentialGrants is what the deployed reconciler's role may read for
	// credentials (HOOKLEDGER_RECONCILE_GRANTS); nil: not checked (the CLI).
	CredentialGrants *source.Grants
	// Interval is the schedule's (0: not checked, as in the CLI or on cron):
	// Check refuses a window minus min_age shorter than it.
	Interval time.Duration
}

// Check validates a spec without a network call, so a misconfiguration stops the cold start.
func (c *Config) Check(s Spec) error {
	name := s.Source + "/" + s.Tenant
	src, ok := c.Sources[s.Source]
	if !ok {
		return fmt.Errorf("reconcile %s: source %q is not in the sources configuration (HOOKLEDGER_SOURCES)", name, s.Source)
	}
	tenant, ok := src.Tenants[s.Tenant]
	if !ok {
		return fmt.Errorf("reconcile %s: source %q has no tenant %q", name, s.Source, s.Tenant)
	}
	if len(tenant.Secrets) == 0 {
		return fmt.Errorf("reconcile %s: the tenant takes events from the bus only (no secrets): reconcile feeds missing events through the receiver, which verifies them with the tenant's signing secret; give it one (docs/eventbridge.md, \"Reconcile\")", name)
	}
	p := src.Provider
	if p != "stripe" && p != "github" {
		return fmt.Errorf("reconcile %s: source %q uses provider %q, and reconcile can ask only %s (docs/reconcile.md says which providers' APIs allow it)",
			name, s.Source, p, strings.Join(Providers, " and "))
	}
	if strings.TrimSpace(s.Credential) == "" {
		return fmt.Errorf("reconcile %s: no credential; set a reference to the %s API credential, e.g. \"ssm:/hookledger/%s/%s-api\"", name, p, s.Tenant, p)
	}
	ref, err := source.ParseRef(s.Credential)
	if err != nil {
		return fmt.Errorf("reconcile %s: credential: %w", name, err)
	}
	if c.CredentialGrants != nil {
		if err := c.CredentialGrants.Check(ref); err != nil {
			return fmt.Errorf("reconcile %s: credential: %w", name, err)
		}
	}
	if err := providerSettings(name, p, s); err != nil {
		return err
	}
	window, err := c.window(s, p)
	if err != nil {
		return err
	}
	age, err := minAge(s)
	if err != nil {
		return err
	}
	if age >= window {
		return fmt.Errorf("reconcile %s: min_age %s is not below the window %s, so every event would count as too recent and nothing would be checked: lower min_age (default %s) or widen window",
			name, age, window, DefaultMinAge)
	}
	// A run judges now-window to now-min_age: a shorter span than the
	// interval leaves gaps between runs.
	if c.Interval > 0 && window-age < c.Interval {
		return fmt.Errorf("reconcile %s: window %v minus min_age %v judges %v of events per run, less than the schedule's interval %v (ReconcileSchedule in template.yaml's Defaults): events in between would never be checked; set window to at least %v (the interval plus min_age; more leaves room for a late or failed run), lower min_age, or run more often",
			name, window, age, window-age, c.Interval, c.Interval+age)
	}
	return nil
}

// providerSettings checks the API URL and that no setting is the other provider's.
func providerSettings(name, p string, s Spec) error {
	def := StripeAPI
	if p == "github" {
		def = GitHubAPI
	}
	if s.TrustAPIURL && s.APIURL == "" {
		return fmt.Errorf("reconcile %s: trust_api_url is set without an api_url: remove it (the default %s needs no trust) or set api_url", name, def)
	}
	if _, err := baseURL(s.APIURL, def, s.TrustAPIURL); err != nil {
		return fmt.Errorf("reconcile %s: %w", name, err)
	}
	switch p {
	case "stripe":
		if s.Hook != "" || s.Redeliver {
			return fmt.Errorf("reconcile %s: hook and redeliver are GitHub settings; Stripe has no documented redelivery API", name)
		}
		if s.Thin && s.All {
			return fmt.Errorf("reconcile %s: all with thin: the v2 Events API lists every thin event anyway (it has no filter for undelivered ones); remove all", name)
		}
		if _, err := NewStripe(StripeOptions{APIKey: "sk_check", Types: s.Types}); err != nil {
			return fmt.Errorf("reconcile %s: %w", name, err)
		}
	case "github":
		if s.All || len(s.Types) > 0 || s.Account != "" || s.Thin {
			return fmt.Errorf("reconcile %s: all, types, account and thin are Stripe settings; a GitHub hook's deliveries are all its own", name)
		}
		if !hookPattern.MatchString(strings.Trim(s.Hook, "/")) {
			return fmt.Errorf("reconcile %s: hook %q: want repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID", name, s.Hook)
		}
	}
	return nil
}

// retention is how long the ledger keeps src's records, as the receiver decides it.
func (c *Config) retention(src string) time.Duration {
	if c.Registry != nil && c.Retention > 0 {
		if r, ok := c.Registry.Retentions(c.Retention)[src]; ok {
			return r.Duration
		}
	}
	return c.Retention
}

// window is the spec's window, or the default one.
func (c *Config) window(s Spec, provider string) (time.Duration, error) {
	retention := c.retention(s.Source)
	if s.Window == "" {
		w := stripeRetention
		if provider == "github" {
			w = githubRetention
		}
		if retention > 0 {
			w = min(w, retention-RetentionMargin)
		}
		return w, nil
	}
	w, err := time.ParseDuration(s.Window)
	if err != nil || w <= 0 {
		return 0, fmt.Errorf("reconcile %s/%s: window %q: want a positive Go duration such as 72h", s.Source, s.Tenant, s.Window)
	}
	if retention > 0 && w > retention-RetentionMargin {
		return 0, fmt.Errorf("reconcile %s/%s: window %v reaches beyond the ledger's retention %v minus %v: records of older events may have expired, and feeding such an event again would run its effects twice; use at most %v, or raise HOOKLEDGER_RETENTION (or the source's \"retention\")",
			s.Source, s.Tenant, w, retention, RetentionMargin, retention-RetentionMargin)
	}
	return w, nil
}

func minAge(s Spec) (time.Duration, error) {
	if s.MinAge == "" {
		return DefaultMinAge, nil
	}
	d, err := time.ParseDuration(s.MinAge)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("reconcile %s/%s: min_age %q: want a Go duration such as 10m (0 judges every event)", s.Source, s.Tenant, s.MinAge)
	}
	return d, nil
}

// Job builds a spec's job: it resolves the credential and, unless a dry run needs none, the secrets.
func (c *Config) Job(ctx context.Context, s Spec, dryRun bool) (Job, error) {
	if err := c.Check(s); err != nil {
		return Job{}, err
	}
	src := c.Sources[s.Source]
	verifier, refs, err := c.Registry.Verifier(s.Source, s.Tenant)
	if err != nil {
		return Job{}, err
	}
	keyFromDelivery := src.KeyHeader != "" || src.KeyPath != ""
	job := Job{Source: s.Source, Tenant: s.Tenant, Verifier: verifier, KeyFromDelivery: keyFromDelivery,
		Retention: c.retention(s.Source), DryRun: dryRun, Redeliver: s.Redeliver}
	job.Window, _ = c.window(s, src.Provider)
	job.MinAge, _ = minAge(s)
	if !dryRun || keyFromDelivery {
		// Each reference resolves on its own (a rotation list keeps working
		// while an old secret is gone); any one the receiver accepts signs.
		res := c.Registry.Secrets(ctx, refs)
		if len(res.Values) == 0 {
			return Job{}, fmt.Errorf("reconcile %s/%s: none of the tenant's signing secrets (to sign rebuilt deliveries) resolved: %w", s.Source, s.Tenant, res.Err())
		}
		job.Secrets = res.Values
	}
	if c.Secrets == nil {
		return Job{}, errors.New("reconcile: no secret resolver for the credential")
	}
	ref, _ := source.ParseRef(s.Credential) // checked above
	cred, err := c.Secrets.Value(ctx, ref)
	if err != nil {
		return Job{}, fmt.Errorf("reconcile %s/%s: the %s API credential: %w", s.Source, s.Tenant, src.Provider, err)
	}
	if source.JSONObject(cred) {
		return Job{}, fmt.Errorf("reconcile %s/%s: the %s API credential %s holds a JSON key/value secret; store the API key or token alone, as plaintext", s.Source, s.Tenant, src.Provider, ref)
	}
	switch src.Provider {
	case "stripe":
		job.Provider, err = NewStripe(StripeOptions{APIKey: cred, BaseURL: s.APIURL, TrustBaseURL: s.TrustAPIURL, Account: s.Account, Client: c.Client, All: s.All, Types: s.Types, Thin: s.Thin})
	default:
		job.Provider, err = NewGitHub(GitHubOptions{Token: cred, Hook: s.Hook, BaseURL: s.APIURL, TrustBaseURL: s.TrustAPIURL, Client: c.Client})
	}
	if err != nil {
		return Job{}, fmt.Errorf("reconcile %s/%s: %w", s.Source, s.Tenant, err)
	}
	return job, nil
}
