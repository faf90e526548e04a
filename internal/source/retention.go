package source

import (
	"errors"
	"fmt"
	"time"

	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// RetentionMargin is added to a provider's retry horizon where the default
// retention is raised to it. Horizons are round figures, a late queue can
// push a last retry past them, and clocks differ. A day covers all three,
// and costs next to nothing in storage (docs/providers.md).
const RetentionMargin = 24 * time.Hour

// Retention is the retention a source's records get, and why.
type Retention struct {
	Duration time.Duration
	// Reason says where Duration comes from: the source's "retention", the
	// default, or the default raised to the provider's retry horizon.
	Reason string
}

// checkRetention validates a source's "retention" against the floor and its
// provider's retry horizon. It returns the source's own retention (0 when it
// sets none) and the horizon.
func checkRetention(src Source) (time.Duration, webhook.Horizon, error) {
	h := BusHorizon
	if src.Provider != ProviderEventBridge {
		var err error
		if h, err = webhook.RetryHorizon(src.Provider); err != nil {
			return 0, webhook.Horizon{}, err
		}
		if len(src.BusSources) > 0 && BusHorizon.Duration > h.Duration {
			h = BusHorizon
		}
	}
	if src.Retention == "" {
		if src.RetentionForce {
			return 0, h, errors.New(`"retention_force" without "retention" forces nothing: remove it, or set "retention"`)
		}
		return 0, h, nil
	}
	d, err := time.ParseDuration(src.Retention)
	if err != nil || d <= 0 {
		return 0, h, fmt.Errorf(`retention %q: want a positive Go duration such as "240h" (10 days)`, src.Retention)
	}
	if d < ledger.MinRetention {
		return 0, h, fmt.Errorf("retention %s is below the %s minimum: a record must outlive its own processing "+
			"(retries, reclaims, an outage), or an accepted event could expire before it is done; raise it",
			short(d), short(ledger.MinRetention))
	}
	if d < h.Duration && !src.RetentionForce {
		return 0, h, fmt.Errorf("retention %s is shorter than the %s retry horizon, %s (%s): a delivery retried after %s "+
			`would be recorded as a new event and its effects applied again. Set "retention" to at least %s, `+
			`remove it (the default is HOOKLEDGER_RETENTION, raised to %s where shorter), or add "retention_force": true to accept that`,
			short(d), src.Provider, short(h.Duration), h.Basis, short(d), short(h.Duration), short(h.Duration+RetentionMargin))
	}
	return d, h, nil
}

// Retentions returns each source's retention: its own "retention" when it
// sets one, else global (HOOKLEDGER_RETENTION) raised, where that is
// shorter, to the provider's retry horizon plus RetentionMargin. global is
// the default and not a ceiling: a source may keep its records longer than
// the others (docs/providers.md argues it).
func (r *Registry) Retentions(global time.Duration) map[string]Retention {
	out := make(map[string]Retention, len(r.entries))
	for name := range r.entries {
		out[name] = r.retention(name, global)
	}
	return out
}

// retention is one source's entry of Retentions.
func (r *Registry) retention(name string, global time.Duration) Retention {
	e := r.entries[name]
	floor := e.horizon.Duration + RetentionMargin
	switch {
	case e.retention > 0 && e.retention < e.horizon.Duration:
		return Retention{e.retention, fmt.Sprintf("configured, below the %s retry horizon %s (retention_force)", e.provider, short(e.horizon.Duration))}
	case e.retention > 0:
		return Retention{e.retention, "configured"}
	case global < floor:
		return Retention{floor, fmt.Sprintf("HOOKLEDGER_RETENTION %s raised to the %s retry horizon %s plus %s", short(global), e.provider, short(e.horizon.Duration), short(RetentionMargin))}
	default:
		return Retention{global, "HOOKLEDGER_RETENTION"}
	}
}

// short prints a duration without trailing zero units: 72h, 85m, 27h35m.
func short(d time.Duration) string {
	s := d.String()
	for _, suffix := range []string{"m0s", "h0m"} {
		if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
			s = s[:len(s)-len(suffix)+1]
		}
	}
	return s
}
