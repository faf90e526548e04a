package source

import (
	"strings"
	"testing"
	"time"
)

func registry(t *testing.T, cfg string) (*Registry, error) {
	t.Helper()
	parsed, err := Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return NewRegistry(parsed, &Secrets{})
}

// A retention shorter than the provider's retry horizon stops the cold
// start with a message naming the horizon, why it matters and the three
// ways out; retention_force accepts it; nothing goes below the floor.
func TestRetentionBelowTheHorizonIsRefused(t *testing.T) {
	t.Parallel()
	const tenants = `"tenants":{"acme":{"secrets":["literal:s"]}}`
	for _, c := range []struct {
		name, cfg string
		want      []string // "" entries: must succeed
	}{
		{"stripe below 3 days", `{"stripe":{"provider":"stripe","retention":"48h",` + tenants + `}}`,
			[]string{`source "stripe"`, "retention 48h is shorter than the stripe retry horizon, 72h", "three days",
				`Set "retention" to at least 72h`, "raised to 96h", `"retention_force": true`}},
		{"generic is conservative", `{"acme":{"provider":"generic","retention":"36h",` + tenants + `}}`,
			[]string{"generic retry horizon, 72h", "unknown"}},
		{"svix below its schedule", `{"svix":{"provider":"svix","retention":"24h",` + tenants + `}}`,
			[]string{"svix retry horizon, 28h"}},
		{"below the floor even when forced", `{"stripe":{"provider":"stripe","retention":"12h","retention_force":true,` + tenants + `}}`,
			[]string{"below the 24h minimum"}},
		{"not a duration", `{"stripe":{"provider":"stripe","retention":"3d",` + tenants + `}}`,
			[]string{`retention "3d"`, `"240h"`}},
		{"force alone", `{"stripe":{"provider":"stripe","retention_force":true,` + tenants + `}}`,
			[]string{`"retention_force" without "retention"`}},
		{"forced", `{"stripe":{"provider":"stripe","retention":"48h","retention_force":true,` + tenants + `}}`, nil},
		{"at the horizon", `{"stripe":{"provider":"stripe","retention":"72h",` + tenants + `}}`, nil},
		{"shopify's 4 hours are under the floor", `{"shop":{"provider":"shopify","retention":"24h",` + tenants + `}}`, nil},
	} {
		_, err := registry(t, c.cfg)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted, want refused", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
}

// The default is HOOKLEDGER_RETENTION, raised to the provider's horizon plus
// the margin where shorter; a source's own retention wins either way, also
// above the default (the default is not a ceiling).
func TestRetentions(t *testing.T) {
	t.Parallel()
	reg, err := registry(t, `{
		"stripe":  {"provider":"stripe", "tenants":{"acme":{"secrets":["literal:s"]}}},
		"shop":    {"provider":"shopify","tenants":{"acme":{"secrets":["literal:s"]}}},
		"long":    {"provider":"stripe", "retention":"720h", "tenants":{"acme":{"secrets":["literal:s"]}}},
		"forced":  {"provider":"stripe", "retention":"48h", "retention_force":true, "tenants":{"acme":{"secrets":["literal:s"]}}},
		"zoom":    {"provider":"zoom",   "tenants":{"acme":{"secrets":["literal:s"]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		global time.Duration
		want   map[string]time.Duration
		reason map[string]string
	}{
		{24 * time.Hour,
			map[string]time.Duration{"stripe": 96 * time.Hour, "shop": 28 * time.Hour, "long": 720 * time.Hour, "forced": 48 * time.Hour, "zoom": 24*time.Hour + 85*time.Minute},
			map[string]string{"stripe": "raised to the stripe retry horizon 72h plus 24h", "long": "configured", "forced": "retention_force", "zoom": "horizon 1h25m"}},
		{168 * time.Hour,
			map[string]time.Duration{"stripe": 168 * time.Hour, "shop": 168 * time.Hour, "long": 720 * time.Hour, "forced": 48 * time.Hour, "zoom": 168 * time.Hour},
			map[string]string{"stripe": "HOOKLEDGER_RETENTION"}},
	} {
		got := reg.Retentions(c.global)
		for name, want := range c.want {
			if got[name].Duration != want {
				t.Errorf("global %v: %s gets %v, want %v", c.global, name, got[name].Duration, want)
			}
		}
		for name, want := range c.reason {
			if !strings.Contains(got[name].Reason, want) {
				t.Errorf("global %v: %s reason %q, want it to say %q", c.global, name, got[name].Reason, want)
			}
		}
	}
}
