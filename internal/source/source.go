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
	"regexp"
	"sort"
	"strings"

	"github.com/hookledger/hookledger/webhook"
)

// Source is one sender's configuration: the provider scheme (webhook.Config
// fields inline) and its tenants.
type Source struct {
	webhook.Config
	Tenants map[string]Tenant `json:"tenants"`
}

// Tenant lists a tenant's signing secrets; several are accepted at once so
// that secrets can rotate. Each entry is a secret reference: a literal
// value, "env:NAME", "ssm:/parameter/name" or "secretsmanager:secret-id".
type Tenant struct {
	Secrets []string `json:"secrets"`
}

// Sentinels for the receiver to map to 404.
var (
	ErrUnknownSource = errors.New("unknown source")
	ErrUnknownTenant = errors.New("unknown tenant")
)

// namePattern is what a source or tenant name may look like: it is a URL
// path segment and part of the ledger key.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName reports whether s may name a source or tenant.
func ValidName(s string) bool { return namePattern.MatchString(s) }

// Parse reads the sources JSON (HOOKLEDGER_SOURCES): an object from source
// name to Source. Unknown fields are errors, so a typo never silently turns
// a check off.
func Parse(data []byte) (map[string]Source, error) {
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
	verifier *webhook.Verifier
	tenants  map[string][]string
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
		if !ValidName(name) {
			return nil, fmt.Errorf("source %q: name must match %s", name, namePattern)
		}
		v, err := webhook.New(src.Config)
		if err != nil {
			return nil, fmt.Errorf("source %q: %w", name, err)
		}
		if len(src.Tenants) == 0 {
			return nil, fmt.Errorf("source %q: no tenants (add \"tenants\": {\"<name>\": {\"secrets\": [...]}})", name)
		}
		e := entry{verifier: v, tenants: map[string][]string{}}
		for tn, t := range src.Tenants {
			if !ValidName(tn) {
				return nil, fmt.Errorf("source %q tenant %q: name must match %s", name, tn, namePattern)
			}
			if len(t.Secrets) == 0 {
				return nil, fmt.Errorf("source %q tenant %q: no secrets", name, tn)
			}
			for _, ref := range t.Secrets {
				if err := checkRef(ref); err != nil {
					return nil, fmt.Errorf("source %q tenant %q: %w", name, tn, err)
				}
			}
			e.tenants[tn] = t.Secrets
		}
		r.entries[name] = e
	}
	return r, nil
}

// Verifier returns the source's verifier and the tenant's secret references.
func (r *Registry) Verifier(source, tenant string) (*webhook.Verifier, []string, error) {
	e, ok := r.entries[source]
	if !ok {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownSource, source)
	}
	refs, ok := e.tenants[tenant]
	if !ok {
		return nil, nil, fmt.Errorf("%w %q of source %q", ErrUnknownTenant, tenant, source)
	}
	return e.verifier, refs, nil
}

// Secrets resolves the tenant's secret references (cached).
func (r *Registry) Secrets(ctx context.Context, refs []string) ([]string, error) {
	return r.secrets.Resolve(ctx, refs)
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

func checkRef(ref string) error {
	if strings.TrimSpace(ref) == "" {
		return errors.New("empty secret")
	}
	for _, p := range []string{"env:", "ssm:", "secretsmanager:"} {
		if strings.HasPrefix(ref, p) && len(ref) == len(p) {
			return fmt.Errorf("secret reference %q names nothing", p)
		}
	}
	return nil
}
