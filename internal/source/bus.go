package source

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hookledger/hookledger/webhook"
)

// ProviderEventBridge is the provider of a source that takes events only
// from an EventBridge bus, whoever put them there (your own services, an
// AWS webhook event source, a partner other than Stripe). It has no HTTP
// door and no signature: the bus's IAM policy authenticated each put. Its
// key is the detail's key_path, or the EventBridge event id without one;
// its type the detail's type_path, or the event's detail-type.
const ProviderEventBridge = "eventbridge"

// AnyAccount, in a tenant's "accounts", takes the bus events whose account
// no other tenant of the source lists, including events that name none
// (a Stripe account's own events, not a connected account's).
const AnyAccount = "*"

// StripePartnerSource starts the EventBridge source of the events Stripe's
// partner event sources put on a bus. EventBridge refuses a PutEvents entry
// whose source starts with "aws.", so Stripe alone writes these: the only
// bus events that may share a tenant's key space with its signed HTTP door.
const StripePartnerSource = "aws.partner/stripe.com/"

// ForwardPrefix starts the EventBridge source of every event hookledger
// forwards (Event.Forward): "hookledger." and the source's name
// ("hookledger.stripe"), so a consumer's rule selects them by prefix. No
// source's bus_sources may take them back in.
const ForwardPrefix = "hookledger."

// busProviders may take events from the bus: Stripe (its partner event
// source, snapshot and thin events alike) and ProviderEventBridge.
var busProviders = map[string]bool{"stripe": true, ProviderEventBridge: true}

// BusHorizon is how long after its first put the bus may hand an event over
// again under the same key. EventBridge retries a target for up to 24 hours,
// and a producer's resends are unknown, so an eventbridge source is kept as
// long as a sender that documents nothing. Stripe's events keep Stripe's
// longer horizon.
var BusHorizon = webhook.Horizon{
	Duration: webhook.ConservativeHorizon,
	Basis:    "EventBridge retries a rule target for up to 24 hours, and a producer's own resends under the same key are unknown",
}

// busSource is the bus door's view of one source.
type busSource struct {
	patterns []string          // EventBridge sources taken: exact names, or prefixes ending in *
	keys     *webhook.Verifier // key and type rules of the detail
	accounts map[string]string // account -> tenant
	any      string            // the AnyAccount tenant, if any
}

// BusSource is how the bus door takes one source's events. Safe for
// concurrent use.
type BusSource struct {
	Name     string
	Provider string // "stripe" or ProviderEventBridge
	// Retention is how long the source's records live (Registry.Retentions
	// with the global default).
	Retention time.Duration
	// ReplayGuard is the source's replay guard (Registry.ReplayGuard).
	ReplayGuard bool
	b           *busSource
}

// Keys returns the reader of the detail's key and type (webhook.NewUnsigned).
func (s *BusSource) Keys() *webhook.Verifier { return s.b.keys }

// Tenant returns the tenant whose events come from account (a Stripe
// account, or the AWS account that put the event; "" when none is named),
// and false when no tenant takes them.
func (s *BusSource) Tenant(account string) (string, bool) {
	if t, ok := s.b.accounts[account]; ok && account != "" {
		return t, true
	}
	return s.b.any, s.b.any != ""
}

// ErrNoBusSource: no source takes events of that EventBridge source.
var ErrNoBusSource = errors.New("no source takes events from this EventBridge source")

// Bus returns the source that takes events whose EventBridge "source" is
// eventSource, with its retention under global (HOOKLEDGER_RETENTION).
func (r *Registry) Bus(eventSource string, global time.Duration) (*BusSource, error) {
	for _, name := range busNames(r.entries) {
		e := r.entries[name]
		for _, p := range e.bus.patterns {
			if matchBusSource(p, eventSource) {
				return &BusSource{Name: name, Provider: e.provider, Retention: r.retention(name, global).Duration, ReplayGuard: e.guard, b: e.bus}, nil
			}
		}
	}
	return nil, fmt.Errorf("%w %q (add it to a source's \"bus_sources\")", ErrNoBusSource, eventSource)
}

// HasBus reports whether any source takes events from the bus.
func (r *Registry) HasBus() bool { return len(busNames(r.entries)) > 0 }

// busNames lists the sources that take bus events, sorted.
func busNames(entries map[string]entry) []string {
	var out []string
	for name, e := range entries {
		if e.bus != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func matchBusSource(pattern, s string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(s, p)
	}
	return pattern == s
}

// overlap reports whether two bus_sources patterns can match one source.
func overlap(a, b string) bool {
	pa, wa := strings.CutSuffix(a, "*")
	pb, wb := strings.CutSuffix(b, "*")
	switch {
	case wa && wb:
		return strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)
	case wa:
		return strings.HasPrefix(b, pa)
	case wb:
		return strings.HasPrefix(a, pb)
	}
	return a == b
}

// eventSourceName is what an EventBridge "source" may be (AWS: 1 to 256
// characters); hookledger takes the printable ASCII ones.
var eventSourceName = regexp.MustCompile(`^[!-~]{1,256}$`)

var (
	stripeAccount = regexp.MustCompile(`^acct_[A-Za-z0-9]{1,64}$`)
	awsAccount    = regexp.MustCompile(`^[0-9]{12}$`)
)

// newBusSource validates a source's bus configuration; nil when it takes
// nothing from the bus.
func newBusSource(name string, src Source) (*busSource, error) {
	if len(src.BusSources) == 0 {
		if src.Provider == ProviderEventBridge {
			return nil, fmt.Errorf("source %q: provider %s takes events only from the bus: list the EventBridge sources it takes in \"bus_sources\" (e.g. [\"com.example.orders\"])", name, ProviderEventBridge)
		}
		for tn, t := range src.Tenants {
			if len(t.Accounts) > 0 {
				return nil, fmt.Errorf("source %q tenant %q: \"accounts\" map bus events to tenants, but the source takes nothing from the bus: add \"bus_sources\" or remove \"accounts\"", name, tn)
			}
		}
		return nil, nil
	}
	if !busProviders[src.Provider] {
		return nil, fmt.Errorf("source %q: provider %s cannot take events from the bus (\"bus_sources\"): only stripe (its partner event source) and %s can", name, src.Provider, ProviderEventBridge)
	}
	if src.KeyHeader != "" {
		return nil, fmt.Errorf("source %q: key_header: an event from the bus has no headers; take the key from the detail with key_path", name)
	}
	b := &busSource{accounts: map[string]string{}}
	for i, p := range src.BusSources {
		if !eventSourceName.MatchString(p) || strings.Contains(strings.TrimSuffix(p, "*"), "*") || p == "*" {
			return nil, fmt.Errorf("source %q bus_sources[%d] %q: want an EventBridge source name (aws.partner/stripe.com/ed_..., com.example.orders), or a prefix ending in * (aws.partner/stripe.com/*)", name, i, p)
		}
		if overlap(p, ForwardPrefix+"*") {
			return nil, fmt.Errorf("source %q bus_sources[%d] %q matches the events hookledger forwards (EventBridge source %s<source>): taken back in, each would become a new event; narrow it", name, i, p, ForwardPrefix)
		}
		b.patterns = append(b.patterns, p)
	}
	if src.Provider != ProviderEventBridge { // an eventbridge source has no HTTP door
		if err := checkSharedKeys(name, src, b.patterns); err != nil {
			return nil, err
		}
	}
	cfg := src.Config
	cfg.Tolerance, cfg.URL = "", ""
	if src.Provider == ProviderEventBridge {
		cfg.Provider = ""
	}
	keys, err := webhook.NewUnsigned(cfg)
	if err != nil {
		return nil, fmt.Errorf("source %q: %w", name, err)
	}
	b.keys = keys
	for _, tn := range sortedTenants(src) {
		for _, a := range src.Tenants[tn].Accounts {
			switch {
			case a == AnyAccount:
				if b.any != "" {
					return nil, fmt.Errorf("source %q: tenants %q and %q both take any account (\"*\"): the bus door could not tell whose an event is; keep one", name, b.any, tn)
				}
				b.any = tn
				continue
			case src.Provider == "stripe" && !stripeAccount.MatchString(a):
				return nil, fmt.Errorf("source %q tenant %q: account %q: want a Stripe account id (acct_...), or \"*\" for the events no other tenant takes", name, tn, a)
			case src.Provider == ProviderEventBridge && !awsAccount.MatchString(a):
				return nil, fmt.Errorf("source %q tenant %q: account %q: want the 12-digit AWS account that puts the events, or \"*\" for the events no other tenant takes", name, tn, a)
			}
			if other, dup := b.accounts[a]; dup {
				return nil, fmt.Errorf("source %q: account %s is listed by tenants %q and %q: an event of it can be only one's", name, a, other, tn)
			}
			b.accounts[a] = tn
		}
	}
	if len(b.accounts) == 0 && b.any == "" {
		return nil, fmt.Errorf("source %q: takes events from the bus (\"bus_sources\") but no tenant lists \"accounts\": give the tenant they are for \"accounts\": [\"*\"] (every event), or the accounts whose events are its", name)
	}
	return b, nil
}

// checkSharedKeys refuses a tenant whose signed deliveries would share event
// ids with a bus source other than Stripe's partner source. Whoever may put
// events on that bus could claim a signed event's id first, and the genuine
// delivery would be dropped as a duplicate.
func checkSharedKeys(name string, src Source, patterns []string) error {
	for _, tn := range sortedTenants(src) {
		if t := src.Tenants[tn]; len(t.Secrets) == 0 || len(t.Accounts) == 0 {
			continue
		}
		for i, p := range patterns {
			if !strings.HasPrefix(p, StripePartnerSource) {
				return fmt.Errorf("source %q tenant %q takes signed deliveries and bus events, which share its event ids, but bus_sources[%d] %q is not Stripe's partner event source (%s...): "+
					"whoever may put events on the bus could take a signed event's id first. List only the partner event source, or give the bus events a tenant without secrets (docs/eventbridge.md)",
					name, tn, i, p, StripePartnerSource)
			}
		}
	}
	return nil
}

// checkBusOverlap refuses two sources that would both take one EventBridge
// source's events.
func checkBusOverlap(entries map[string]entry) error {
	names := busNames(entries)
	for i, a := range names {
		for _, b := range names[i+1:] {
			for _, pa := range entries[a].bus.patterns {
				for _, pb := range entries[b].bus.patterns {
					if overlap(pa, pb) {
						return fmt.Errorf("sources %q and %q both take bus events of %q and %q: an event must belong to one source; narrow one of them", a, b, pa, pb)
					}
				}
			}
		}
	}
	return nil
}

func sortedTenants(src Source) []string { return slices.Sorted(maps.Keys(src.Tenants)) }
