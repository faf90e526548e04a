package source

import (
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/webhook"
)

// Square and Twilio sign the URL each tenant's endpoint was configured
// with. A source's url may name {tenant}; without it, one URL for several
// tenants would verify only one of them, so it is refused at cold start.
func TestURLPerTenant(t *testing.T) {
	t.Parallel()
	reg := func(doc string) (*Registry, error) {
		t.Helper()
		cfg, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return NewRegistry(cfg, &Secrets{})
	}
	r, err := reg(`{"square":{"provider":"square","url":"https://hooks.example.com/webhooks/{source}/{tenant}",
		"tenants":{"acme":{"secrets":["literal:a"]},"beta":{"secrets":["literal:b"]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := webhook.New(webhook.Config{Provider: "square"})
	body := []byte(`{"event_id":"e1","type":"payment.updated"}`)
	for tenant, secret := range map[string]string{"acme": "a", "beta": "b"} {
		h, err := signer.Sign(webhook.Message{URL: "https://hooks.example.com/webhooks/square/" + tenant, Body: body}, secret)
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := r.Verifier("square", tenant)
		if err != nil {
			t.Fatal(err)
		}
		// The receiver sees another host (the API's own) than the provider signed.
		if _, err := v.Verify(&webhook.Request{URL: "https://abc.execute-api.us-east-1.amazonaws.com/webhooks/square/" + tenant, Header: h, Body: body}, []string{secret}, time.Now()); err != nil {
			t.Errorf("%s: %v", tenant, err)
		}
	}

	for _, tc := range []struct{ doc, want string }{
		{`{"square":{"provider":"square","url":"https://hooks.example.com/webhooks/square/acme",
			"tenants":{"acme":{"secrets":["literal:a"]},"beta":{"secrets":["literal:b"]}}}}`, "write it with {tenant}"},
		{`{"stripe":{"provider":"stripe","url":"https://hooks.example.com/webhooks/stripe/acme","tenants":{"acme":{"secrets":["literal:a"]}}}}`, "does not sign the URL"},
		{`{"stripe":{"provider":"stripe","url":"https://hooks.example.com/webhooks/stripe/{tenant}","tenants":{"acme":{"secrets":["literal:a"]}}}}`, "does not sign the URL"},
	} {
		if _, err := reg(tc.doc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.doc, err, tc.want)
		}
	}
	// One tenant, one URL: as before.
	if _, err := reg(`{"twilio":{"provider":"twilio","url":"https://hooks.example.com/webhooks/twilio/acme","tenants":{"acme":{"secrets":["literal:a"]}}}}`); err != nil {
		t.Error(err)
	}
}
