package webhook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/webhook"
)

// Every provider has a horizon with what it rests on; a documented one names
// its source, and none exceeds the conservative default that stands in for
// the undocumented ones (the default's whole argument).
func TestRetryHorizonCoversEveryProvider(t *testing.T) {
	t.Parallel()
	for _, p := range webhook.Providers() {
		h, err := webhook.RetryHorizon(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if h.Duration <= 0 || h.Basis == "" {
			t.Errorf("%s: horizon %v with basis %q", p, h.Duration, h.Basis)
		}
		if h.Documented && !strings.HasPrefix(h.Source, "https://") {
			t.Errorf("%s: documented horizon without a source", p)
		}
		if !h.Documented && (h.Duration != webhook.ConservativeHorizon || h.Source != "") {
			t.Errorf("%s: undocumented horizon must be ConservativeHorizon with no source, got %v %q", p, h.Duration, h.Source)
		}
		if h.Duration > webhook.ConservativeHorizon {
			t.Errorf("%s: horizon %v exceeds ConservativeHorizon %v; raise the conservative default", p, h.Duration, webhook.ConservativeHorizon)
		}
	}
}

func TestRetryHorizonValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		provider   string
		want       time.Duration
		documented bool
	}{
		{"stripe", 72 * time.Hour, true},
		{"paddle", 72 * time.Hour, true},
		{"github", 72 * time.Hour, true},
		{"svix", 28 * time.Hour, true},
		{"shopify", 4 * time.Hour, true},
		{"zoom", 85 * time.Minute, true},
		{"generic", webhook.ConservativeHorizon, false},
		{"standard-webhooks", webhook.ConservativeHorizon, false},
	} {
		h, err := webhook.RetryHorizon(c.provider)
		if err != nil || h.Duration != c.want || h.Documented != c.documented {
			t.Errorf("%s: %+v %v; want %v documented=%v", c.provider, h, err, c.want, c.documented)
		}
	}
	if _, err := webhook.RetryHorizon("strpie"); err == nil || !strings.Contains(err.Error(), "stripe") {
		t.Errorf("unknown provider: %v; want an error listing the known ones", err)
	}
}
