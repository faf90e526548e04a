package webhook_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/webhook"
)

// BenchmarkVerify is signature verification plus key and type extraction
// per provider and body size.
func BenchmarkVerify(b *testing.B) {
	providers := []struct {
		name   string
		cfg    webhook.Config
		secret string
	}{
		{"stripe", webhook.Config{Provider: "stripe"}, "whsec_bench_0123456789"},
		{"github", webhook.Config{Provider: "github"}, "gh-bench-secret"},
		{"standard-webhooks", webhook.Config{Provider: "standard-webhooks"}, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		{"shopify", webhook.Config{Provider: "shopify"}, "shpss_bench_secret"},
		{"slack", webhook.Config{Provider: "slack"}, "slack-bench-signing-secret"},
		{"generic-derived", webhook.Config{Provider: "generic", Generic: &webhook.GenericConfig{}}, "generic-bench-secret"},
	}
	for _, p := range providers {
		for _, size := range testbody.Sizes {
			b.Run(fmt.Sprintf("%s/%s", p.name, strings.ReplaceAll(testbody.Label(size), " ", "")), func(b *testing.B) {
				v, err := webhook.New(p.cfg)
				if err != nil {
					b.Fatal(err)
				}
				body := testbody.JSON("evt_bench_0001", size)
				now := time.Now()
				h, err := v.Sign(webhook.Message{ID: "msg_bench_0001", Type: "invoice.paid", Body: body, Now: now}, p.secret)
				if err != nil {
					b.Fatal(err)
				}
				req := &webhook.Request{Method: "POST", URL: "https://hooks.example.com/webhooks/x/acme", Header: h, Body: body}
				secrets := []string{p.secret}
				if _, err := v.Verify(req, secrets, now); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					v.Verify(req, secrets, now)
				}
			})
		}
	}
}
