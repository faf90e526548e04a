package receiver_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/webhook"
)

// scriptedSSM answers GetParameter from a map of name to value or error.
type scriptedSSM map[string]any

func (s scriptedSSM) GetParameter(_ context.Context, name string) (string, error) {
	switch v := s[name].(type) {
	case string:
		return v, nil
	case error:
		return "", v
	}
	return "", &smithy.GenericAPIError{Code: "ParameterNotFound", Message: "not found"}
}

// A server-side cause (a secret that cannot be read or used) is answered
// 503 and counted, never 401, which senders treat as final. Before, an
// unusable secret (ErrNoSecret) was a 401.
func TestSecretProblemsAre503AndRotationSurvivesADeletedSecret(t *testing.T) {
	t.Parallel()
	throttled := &smithy.GenericAPIError{Code: "ThrottlingException", Message: "slow down"}
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"}
	store := scriptedSSM{"/p/new": stripeSecret, "/p/throttled": throttled, "/p/denied": denied}
	tenants := map[string]source.Tenant{
		"rotating":   {Secrets: []string{"ssm:/p/new", "ssm:/p/deleted-old"}},
		"deleted":    {Secrets: []string{"ssm:/p/deleted-old"}},
		"throttled":  {Secrets: []string{"ssm:/p/throttled"}},
		"denied":     {Secrets: []string{"ssm:/p/denied"}},
		"halfdenied": {Secrets: []string{"ssm:/p/denied", "literal:whsec_other"}},
		"env":        {Secrets: []string{"env:UNSET_SECRET"}},
	}
	f := setupWith(t, map[string]source.Source{
		"pay": {Config: webhook.Config{Provider: "stripe"}, Tenants: tenants},
		"std": {Config: webhook.Config{Provider: "standard-webhooks"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:not-a-whsec-secret!"}}}},
	}, &source.Secrets{SSM: store, Getenv: func(string) string { return "" }})
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	tests := []struct {
		name, path, secret string
		status             int
		result             string
	}{
		{"rotation list with a deleted old secret, signed with new", "/webhooks/pay/rotating", stripeSecret, 200, "accepted"},
		{"rotation list, signed with the deleted secret", "/webhooks/pay/rotating", "whsec_deleted", 401, "rejected_signature"},
		{"only secret deleted", "/webhooks/pay/deleted", stripeSecret, 503, "unavailable_secret"},
		{"secret store throttling", "/webhooks/pay/throttled", stripeSecret, 503, "unavailable_secret"},
		{"access denied", "/webhooks/pay/denied", stripeSecret, 503, "unavailable_secret"},
		{"one secret denied, signature matches none of the others", "/webhooks/pay/halfdenied", stripeSecret, 503, "unavailable_secret"},
		{"env variable unset", "/webhooks/pay/env", stripeSecret, 503, "unavailable_secret"},
	}
	for i, tt := range tests {
		req := f.request(t, f.stripe, tt.path, tt.secret, webhook.Message{Body: stripeBody("evt_secret_" + string(rune('a'+i)))})
		resp := f.handle(t, req)
		if resp.StatusCode != tt.status || resp.Headers["X-Hookledger-Result"] != tt.result {
			t.Errorf("%s: got %d %s, want %d %s", tt.name, resp.StatusCode, resp.Headers["X-Hookledger-Result"], tt.status, tt.result)
		}
	}
	// A secret the scheme cannot use (Standard Webhooks wants whsec_ and
	// base64): ErrNoSecret from the verifier.
	sv, _ := webhook.New(webhook.Config{Provider: "standard-webhooks"})
	req := f.request(t, sv, "/webhooks/std/acme", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", webhook.Message{ID: "msg_1", Body: []byte(`{"type":"x"}`)})
	if resp := f.handle(t, req); resp.StatusCode != 503 || resp.Headers["X-Hookledger-Result"] != "unavailable_secret" {
		t.Errorf("unusable secret: got %d %v, want 503 unavailable_secret", resp.StatusCode, resp.Headers)
	}
	// Each 503 counts Unavailable, SecretUnavailable (which names the
	// cause on the dashboard) and NeedsOperator (which the template alarms
	// on: a secret that cannot be read does not come back by itself).
	for _, name := range []string{"SecretUnavailable", "NeedsOperator"} {
		if n := strings.Count(emf.String(), `"`+name+`":1`); n != 6 {
			t.Errorf("%d EMF lines count %s, want 6:\n%s", n, name, emf.String())
		}
	}
	if n := f.items(t); n != 2 {
		t.Errorf("table holds %d items, want 2 (the accepted event's record and payload)", n)
	}
}
