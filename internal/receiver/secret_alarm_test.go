package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/webhook"
)

// scriptedSM answers GetSecretValue from a map of id to value.
type scriptedSM map[string]string

func (s scriptedSM) GetSecretValue(_ context.Context, id string) (string, error) {
	if v, ok := s[id]; ok {
		return v, nil
	}
	return "", &smithy.GenericAPIError{Code: "ResourceNotFoundException", Message: "not found"}
}

// Every request the SecretUnavailable alarm counts leaves a log line that
// names what to fix: the source, the tenant, the reference (never a value)
// and the problem, which the alarm's Logs Insights query groups by. A
// forged request to a tenant with one unreadable secret is among them: the
// receiver cannot tell it from a delivery signed with that secret.
func TestSecretUnavailableNamesWhatToFix(t *testing.T) {
	t.Parallel()
	throttled := &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized"}
	const kvValue = "whsec_inside_a_json_object"
	tenants := map[string]source.Tenant{
		"halfdenied": {Secrets: []string{"ssm:/p/denied", "literal:whsec_readable_value"}},
		"throttled":  {Secrets: []string{"ssm:/p/throttled"}},
		"deleted":    {Secrets: []string{"ssm:/p/deleted"}},
		"keyvalue":   {Secrets: []string{"secretsmanager:hookledger/kv"}},
	}
	f := setupWith(t, map[string]source.Source{
		"pay": {Config: webhook.Config{Provider: "stripe"}, Tenants: tenants},
		"std": {Config: webhook.Config{Provider: "standard-webhooks"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:not-a-whsec-secret!"}}}},
	}, &source.Secrets{SSM: scriptedSSM{"/p/denied": denied, "/p/throttled": throttled},
		SecretsManager: scriptedSM{"hookledger/kv": `{"stripe":"` + kvValue + `"}`}})
	var logs bytes.Buffer
	f.h.Log = slog.New(slog.NewJSONHandler(&logs, nil))

	tests := []struct {
		tenant, ref, problem string
	}{
		// Signed with a secret the tenant does not have: a forgery.
		{"halfdenied", "ssm:/p/denied", source.ProblemDenied},
		{"throttled", "ssm:/p/throttled", source.ProblemThrottled},
		{"deleted", "ssm:/p/deleted", source.ProblemDeleted},
		{"keyvalue", "secretsmanager:hookledger/kv", source.ProblemNotPlaintext},
	}
	for i, tt := range tests {
		req := f.request(t, f.stripe, "/webhooks/pay/"+tt.tenant, "whsec_forged", webhook.Message{Body: stripeBody("evt_alarm_" + string(rune('a'+i)))})
		if resp := f.handle(t, req); resp.StatusCode != 503 || resp.Headers["X-Hookledger-Result"] != "unavailable_secret" {
			t.Fatalf("%s: %d %s, want 503 unavailable_secret", tt.tenant, resp.StatusCode, resp.Headers["X-Hookledger-Result"])
		}
	}
	sv, _ := webhook.New(webhook.Config{Provider: "standard-webhooks"})
	req := f.request(t, sv, "/webhooks/std/acme", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", webhook.Message{ID: "msg_alarm", Body: []byte(`{"type":"x"}`)})
	if resp := f.handle(t, req); resp.StatusCode != 503 {
		t.Fatalf("unusable secret: %d, want 503", resp.StatusCode)
	}
	tests = append(tests, struct{ tenant, ref, problem string }{"acme", "literal:(", "not usable for this provider"})

	// What the alarm's query selects: lines with secret_problem.
	type line struct {
		Source, Tenant string
		Ref            string `json:"secret_ref"`
		Problem        string `json:"secret_problem"`
		Fix            string `json:"secret_fix"`
	}
	var found []line
	for _, raw := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		if l.Problem != "" {
			found = append(found, l)
		}
	}
	for _, tt := range tests {
		ok := false
		for _, l := range found {
			if l.Tenant == tt.tenant && strings.HasPrefix(l.Ref, tt.ref) && l.Problem == tt.problem && l.Fix != "" && l.Source != "" {
				ok = true
			}
		}
		if !ok {
			t.Errorf("no log line names tenant %s, reference %s, problem %q and a fix; lines with secret_problem: %+v", tt.tenant, tt.ref, tt.problem, found)
		}
	}
	for _, value := range []string{"whsec_readable_value", kvValue, "not-a-whsec-secret!"} {
		if strings.Contains(logs.String(), value) {
			t.Errorf("the log carries a secret value (%s):\n%s", value, logs.String())
		}
	}
}
