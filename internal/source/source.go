// Package source holds the receiver's configuration of senders: which
// sources exist, which provider scheme each uses, which tenants each serves,
// and where each tenant's signing secrets live (inline, an environment
// variable, SSM Parameter Store or Secrets Manager), with a cache.
package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hookledger/hookledger/jsoncheck"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// Source is one sender's configuration: the provider scheme (webhook.Config
// fields inline), its tenants, and whether the receiver refuses replays.
type Source struct {
	webhook.Config
	// ReplayGuard refuses a body the tenant already accepted with the same
	// type under another event id, within retention, for one more
	// conditional write per delivery. nil is GuardByDefault: on where a
	// captured delivery could come again under a new id (docs/providers.md,
	// "What the signature covers").
	ReplayGuard *bool `json:"replay_guard,omitempty"`
	// Retention is how long this source's records, payloads and digests
	// live (a Go duration such as "240h"). Empty: HOOKLEDGER_RETENTION,
	// raised where needed to the provider's retry horizon plus
	// RetentionMargin. Shorter than the horizon needs RetentionForce.
	Retention string `json:"retention,omitempty"`
	// RetentionForce accepts a Retention shorter than the retry horizon: a
	// later retry is recorded as a new event, and its effects run again.
	RetentionForce bool `json:"retention_force,omitempty"`
	// BusSources are the EventBridge sources whose events this source takes
	// from InboundEventBus: exact names, or prefixes ending in *
	// ("aws.partner/stripe.com/ed_..."). Only stripe and ProviderEventBridge
	// sources may; the tenants' "accounts" say whose each event is
	// (docs/eventbridge.md).
	BusSources []string          `json:"bus_sources,omitempty"`
	Tenants    map[string]Tenant `json:"tenants"`
}

// Tenant lists a tenant's signing secrets, several at once so they can
// rotate. Each is a reference with an explicit scheme (ParseRef):
// "literal:VALUE", "env:NAME", "ssm:/name" or "secretsmanager:name-or-ARN".
// A tenant without secrets takes events from the bus only (HTTP gets 404).
type Tenant struct {
	Secrets []string `json:"secrets,omitempty"`
	// Accounts are the accounts whose bus events are this tenant's: Stripe
	// account ids (a snapshot event's "account", a thin one's "context"),
	// or the AWS accounts that put them for an eventbridge source.
	// AnyAccount takes every event no other tenant lists.
	Accounts []string `json:"accounts,omitempty"`
}

// Sentinels for the receiver to map to 404.
var (
	ErrUnknownSource = errors.New("unknown source")
	ErrUnknownTenant = errors.New("unknown tenant")
)

// Parse reads the sources JSON (HOOKLEDGER_SOURCES): an object from source
// name to Source. Unknown fields are errors, so a typo never silently turns
// a check off; so are a key given twice and anything after the document.
func Parse(data []byte) (map[string]Source, error) {
	if err := jsoncheck.Strict(data); err != nil {
		return nil, fmt.Errorf("sources config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg map[string]Source
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("sources config: %w (want {\"<source>\": {\"provider\": \"stripe\", \"tenants\": {\"<tenant>\": {\"secrets\": [\"whsec_...\"]}}}})", err)
	}
	if len(cfg) == 0 {
		return nil, errors.New("sources config: no sources configured")
	}
	return cfg, nil
}

type entry struct {
	provider  string
	verifier  *webhook.Verifier            // nil for a bus-only provider (ProviderEventBridge)
	bus       *busSource                   // nil: takes nothing from the bus
	byTenant  map[string]*webhook.Verifier // when url names {tenant}: each tenant's own URL
	guard     bool
	retention time.Duration // the source's own; 0: the default
	horizon   webhook.Horizon
	tenants   map[string][]Ref
}

// Registry resolves a (source, tenant) pair to its verifier and secrets.
// Safe for concurrent use.
type Registry struct {
	entries map[string]entry
	secrets *Secrets
}

// NewRegistry validates cfg and builds every verifier once (at cold start).
func NewRegistry(cfg map[string]Source, secrets *Secrets) (*Registry, error) {
	r := &Registry{entries: map[string]entry{}, secrets: secrets}
	for name, src := range cfg {
		if !ledger.ValidName(name) {
			return nil, fmt.Errorf("source %q: name must be %s", name, ledger.NameRule)
		}
		if len(src.Tenants) == 0 {
			return nil, fmt.Errorf("source %q: no tenants (add \"tenants\": {\"<name>\": {\"secrets\": [...]}})", name)
		}
		bus, err := newBusSource(name, src)
		if err != nil {
			return nil, err
		}
		var e entry
		if src.Provider == ProviderEventBridge {
			e, err = eventBridgeEntry(name, src, bus)
		} else {
			e, err = httpEntry(name, src, bus)
		}
		if err != nil {
			return nil, err
		}
		r.entries[name] = e
	}
	if err := checkBusOverlap(r.entries); err != nil {
		return nil, err
	}
	return r, nil
}

// httpEntry builds a source with an HTTP door: its verifiers, and each
// tenant's secret references.
func httpEntry(name string, src Source, bus *busSource) (entry, error) {
	// url is the one URL the provider signed; each tenant posts to its
	// own, so with several tenants it must say where the tenant goes.
	perTenant := strings.Contains(src.URL, "{")
	if src.URL != "" && !perTenant && len(src.Tenants) > 1 && webhook.SignsURL(src.Provider) {
		return entry{}, fmt.Errorf("source %q: url is one URL, but its %d tenants each post to their own and %s signs it: write it with {tenant}, e.g. %q",
			name, len(src.Tenants), src.Provider, "https://hooks.example.com/webhooks/"+name+"/{tenant}")
	}
	base := src.Config
	if perTenant {
		base.URL = "" // the source-wide verifier (provider, digests) needs none
	}
	v, err := webhook.New(base)
	if err != nil {
		return entry{}, fmt.Errorf("source %q: %w", name, err)
	}
	if perTenant && !webhook.SignsURL(src.Provider) {
		return entry{}, fmt.Errorf("source %q: url is set, but %s does not sign the URL, so it would be ignored: remove it (only twilio and square use it)", name, src.Provider)
	}
	retention, horizon, err := checkRetention(src)
	if err != nil {
		return entry{}, fmt.Errorf("source %q: %w", name, err)
	}
	guard := GuardByDefault(src.Config)
	if src.ReplayGuard != nil {
		guard = *src.ReplayGuard
	}
	e := entry{provider: src.Provider, verifier: v, bus: bus, guard: guard, retention: retention, horizon: horizon, tenants: map[string][]Ref{}}
	for tn, t := range src.Tenants {
		if !ledger.ValidName(tn) {
			return entry{}, fmt.Errorf("source %q tenant %q: name must be %s", name, tn, ledger.NameRule)
		}
		if len(t.Secrets) == 0 && len(t.Accounts) == 0 {
			return entry{}, fmt.Errorf("source %q tenant %q: no secrets (its HTTP door) and no accounts (its bus door)", name, tn)
		}
		refs := make([]Ref, 0, len(t.Secrets))
		for i, s := range t.Secrets {
			ref, err := ParseRef(s)
			if err != nil {
				return entry{}, fmt.Errorf("source %q tenant %q secrets[%d]: %w", name, tn, i, err)
			}
			refs = append(refs, ref)
		}
		e.tenants[tn] = refs
		if perTenant {
			cfg := src.Config
			cfg.URL = strings.NewReplacer("{source}", name, "{tenant}", tn).Replace(src.URL)
			tv, err := webhook.New(cfg)
			if err != nil {
				return entry{}, fmt.Errorf("source %q tenant %q: %w", name, tn, err)
			}
			if e.byTenant == nil {
				e.byTenant = map[string]*webhook.Verifier{}
			}
			e.byTenant[tn] = tv
		}
	}
	return e, nil
}

// eventBridgeEntry builds a ProviderEventBridge source: the bus door only.
func eventBridgeEntry(name string, src Source, bus *busSource) (entry, error) {
	switch {
	case src.URL != "" || src.Tolerance != "" || src.Generic != nil || src.VolatileFields != nil:
		return entry{}, fmt.Errorf("source %q: url, tolerance, generic and volatile_fields are about signed HTTP deliveries; an %s source has none", name, ProviderEventBridge)
	case src.ReplayGuard != nil && *src.ReplayGuard:
		return entry{}, fmt.Errorf("source %q: replay_guard: an %s source's events come from the bus, where IAM, not a signature, decides who puts them; take the key from the detail (key_path) so that a repeat is a duplicate", name, ProviderEventBridge)
	}
	retention, horizon, err := checkRetention(src)
	if err != nil {
		return entry{}, fmt.Errorf("source %q: %w", name, err)
	}
	e := entry{provider: ProviderEventBridge, bus: bus, retention: retention, horizon: horizon, tenants: map[string][]Ref{}}
	for tn, t := range src.Tenants {
		if !ledger.ValidName(tn) {
			return entry{}, fmt.Errorf("source %q tenant %q: name must be %s", name, tn, ledger.NameRule)
		}
		if len(t.Secrets) > 0 {
			return entry{}, fmt.Errorf("source %q tenant %q: secrets: an %s source has no HTTP door to sign for; remove them", name, tn, ProviderEventBridge)
		}
		if len(t.Accounts) == 0 {
			return entry{}, fmt.Errorf("source %q tenant %q: no accounts: list the AWS accounts whose events are its, or \"*\"", name, tn)
		}
		e.tenants[tn] = nil
	}
	return e, nil
}

// Verifier returns the source's verifier and the tenant's secret references.
func (r *Registry) Verifier(source, tenant string) (*webhook.Verifier, []Ref, error) {
	e, ok := r.entries[source]
	if !ok || e.verifier == nil {
		// A bus-only source has no HTTP door.
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownSource, source)
	}
	refs, ok := e.tenants[tenant]
	if !ok || len(refs) == 0 {
		// A tenant without secrets takes events from the bus only.
		return nil, nil, fmt.Errorf("%w %q of source %q", ErrUnknownTenant, tenant, source)
	}
	if v, ok := e.byTenant[tenant]; ok {
		return v, refs, nil
	}
	return e.verifier, refs, nil
}

// Secrets resolves the tenant's secret references one by one (cached).
func (r *Registry) Secrets(ctx context.Context, refs []Ref) Resolved {
	return r.secrets.Resolve(ctx, refs)
}

// ReplayGuard reports whether the source refuses replayed bodies: its
// replay_guard, or GuardByDefault where that is left out.
func (r *Registry) ReplayGuard(source string) bool { return r.entries[source].guard }

// GuardByDefault reports whether a source's replay guard is on when
// replay_guard is left out. It is on when the key comes from something the
// signature does not cover: a captured delivery sent again under a new key
// would pass as a new event. Such keys are a header the scheme does not sign
// (GitHub's X-GitHub-Delivery, Shopify's ids, Twilio's idempotency token,
// Linear-Delivery, a generic id_header), any key_header (hookledger cannot
// tell whether it is signed), and all of GitLab's (its token signs nothing).
// Linear's signed timestamp narrows the window to a minute, but does not
// close it. Where the key is in or derived from the signed content, a
// replay is a duplicate anyway, and the guard would cost a write and refuse
// nothing. Types do not decide it: the guard is scoped by type
// (ledger.ClaimBody).
func GuardByDefault(c webhook.Config) bool {
	switch {
	case c.Provider == "gitlab" || c.KeyHeader != "":
		return true
	case c.KeyPath != "":
		return false
	case c.Provider == "generic":
		return c.Generic != nil && c.Generic.IDHeader != ""
	}
	switch c.Provider {
	case "github", "shopify", "twilio", "linear":
		return true
	}
	return false
}

// CheckStored refuses the references whose secret is not in a secret
// store: literal: (the value itself) and env: (a function environment
// variable). On AWS both sit in plain text in the function's configuration,
// which anyone allowed lambda:GetFunctionConfiguration can read, and a
// signing secret read there lets anyone forge signed deliveries. Local runs
// and emulators may use them.
func (r *Registry) CheckStored() error {
	var errs []error
	for _, name := range r.Names() {
		src, tenant, _ := strings.Cut(name, "/")
		for _, ref := range r.entries[src].tenants[tenant] {
			if ref.Scheme == SchemeLiteral || ref.Scheme == SchemeEnv {
				errs = append(errs, fmt.Errorf("source %q tenant %q: a %s: secret is plain text in the function's configuration; store it in SSM (ssm:/...) or Secrets Manager (secretsmanager:...) under the granted path or prefix", src, tenant, ref.Scheme))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckGrants checks every reference against what the deployed role may
// read, and names each one outside it with the fix.
func (r *Registry) CheckGrants(g Grants) error {
	var errs []error
	for _, name := range r.Names() {
		src, tenant, _ := strings.Cut(name, "/")
		for _, ref := range r.entries[src].tenants[tenant] {
			if err := g.Check(ref); err != nil {
				errs = append(errs, fmt.Errorf("source %q tenant %q: %w", src, tenant, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Names lists "source/tenant" pairs, sorted.
func (r *Registry) Names() []string {
	var out []string
	for s, e := range r.entries {
		for t := range e.tenants {
			out = append(out, s+"/"+t)
		}
	}
	sort.Strings(out)
	return out
}
