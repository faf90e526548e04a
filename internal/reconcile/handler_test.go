package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/source"
)

func handlerConfig(t *testing.T) config.Config {
	t.Helper()
	c, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c.SourcesJSON = `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_h"]}}}}`
	return c
}

func TestFromConfigRefusesWhatCannotWork(t *testing.T) {
	t.Parallel()
	c := handlerConfig(t)
	ok := `[{"source":"stripe","tenant":"acme","credential":"literal:sk_x"}]`
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{ReceiverFunction: "r"}, "HOOKLEDGER_RECONCILE is empty"},
		{Settings{Specs: `[]`, ReceiverFunction: "r"}, "lists no source"},
		{Settings{Specs: `{"source":"stripe"}`, ReceiverFunction: "r"}, "reconcile config"},
		{Settings{Specs: `[{"source":"stripe","tenant":"nope","credential":"literal:x"},{"source":"github","tenant":"acme","credential":"literal:x"}]`, ReceiverFunction: "r"}, "no tenant \"nope\""},
		{Settings{Specs: ok}, "HOOKLEDGER_RECEIVER_FUNCTION"},
		{Settings{Specs: ok, WebhookURL: "hooks.example.com"}, "HOOKLEDGER_WEBHOOK_URL"},
		{Settings{Specs: `[{"source":"stripe","tenant":"acme","credential":"literal:sk_x","api_url":"https://stripe-proxy.example.com"}]`, ReceiverFunction: "r"}, `set "trust_api_url": true`},
	} {
		_, err := FromConfig(c, tc.s, aws.Config{Region: "us-east-1"}, func(string) string { return "" }, quiet())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
	// On AWS (in Lambda, no emulator endpoint) plain-text credentials and
	// signing secrets are refused; against an emulator they are fine.
	onAWS := c
	onAWS.FunctionName = "hookledger-reconciler"
	if _, err := FromConfig(onAWS, Settings{Specs: ok, ReceiverFunction: "r"}, aws.Config{Region: "us-east-1"}, func(string) string { return "" }, quiet()); err == nil ||
		!strings.Contains(err.Error(), "a literal: credential is plain text") {
		t.Errorf("literal credential on AWS: %v", err)
	}
	stored := onAWS
	stored.SourcesJSON = `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_h"]}}}}`
	if _, err := FromConfig(stored, Settings{Specs: `[{"source":"stripe","tenant":"acme","credential":"ssm:/hookledger/prod/reconcile/stripe"}]`, ReceiverFunction: "r"},
		aws.Config{Region: "us-east-1"}, func(string) string { return "" }, quiet()); err == nil || !strings.Contains(err.Error(), "signing secrets must come from a secret store") {
		t.Errorf("literal signing secret on AWS: %v", err)
	}
	emulated := func(k string) string { return map[string]string{"AWS_ENDPOINT_URL": "http://localhost:4566"}[k] }
	if _, err := FromConfig(onAWS, Settings{Specs: ok, ReceiverFunction: "r"}, aws.Config{Region: "us-east-1"}, emulated, quiet()); err != nil {
		t.Errorf("against an emulator: %v", err)
	}
	// References outside what the template grants the reconciler's role
	// stop it at cold start, as they stop the receiver.
	_, err := FromConfig(c, Settings{Specs: `[{"source":"stripe","tenant":"acme","credential":"ssm:/elsewhere/stripe-api"}]`,
		ReceiverFunction: "r", CredentialGrants: "ssm=/hookledger/prod/reconcile;secretsmanager_prefix=hookledger/prod/reconcile/"}, aws.Config{Region: "us-east-1"}, nil, quiet())
	if err == nil || !strings.Contains(err.Error(), "ssm:/hookledger/prod/reconcile/stripe-api") || !strings.Contains(err.Error(), "SecretsPrefix=elsewhere") {
		t.Errorf("credential outside the grant: %v", err)
	}
	granted := c
	granted.SourcesJSON = `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["ssm:/other/stripe"]}}}}`
	granted.SecretGrants = "ssm=/hookledger/prod;secretsmanager_prefix=hookledger/prod/;except=reconcile/"
	if _, err := FromConfig(granted, Settings{Specs: ok, ReceiverFunction: "r"}, aws.Config{Region: "us-east-1"}, nil, quiet()); err == nil || !strings.Contains(err.Error(), "could not read these signing secrets") {
		t.Errorf("signing secret outside the grant: %v", err)
	}
	bad := c
	bad.SourcesJSON = ""
	if _, err := FromConfig(bad, Settings{Specs: ok, ReceiverFunction: "r"}, aws.Config{}, nil, quiet()); err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_SOURCES") {
		t.Fatalf("no sources: %v", err)
	}
	if _, err := FromConfig(c, Settings{Specs: ok, ReceiverFunction: "r"}, aws.Config{Region: "us-east-1"}, nil, quiet()); err != nil {
		t.Fatalf("valid: %v", err)
	}
}

// fakeConfig answers GetFunctionConfiguration with an environment.
type fakeConfig struct {
	vars  map[string]string
	err   error
	asked string
}

func (f *fakeConfig) GetFunctionConfiguration(_ context.Context, in *lambda.GetFunctionConfigurationInput, _ ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error) {
	f.asked = *in.FunctionName
	if f.err != nil {
		return nil, f.err
	}
	return &lambda.GetFunctionConfigurationOutput{Environment: &lambdatypes.EnvironmentResponse{Variables: f.vars}}, nil
}

func TestReceiverSources(t *testing.T) {
	t.Parallel()
	c := handlerConfig(t)
	c.SourcesJSON = ""
	f := &fakeConfig{vars: map[string]string{"HOOKLEDGER_SOURCES": `{"x":1}`, "HOOKLEDGER_SECRET_GRANTS": "ssm=/a"}}
	if err := ReceiverSources(t.Context(), &c, f, "stack-receiver", ""); err != nil || c.SourcesJSON != `{"x":1}` || c.SecretGrants != "ssm=/a" || f.asked != "stack-receiver" {
		t.Fatalf("%v %+v", err, c)
	}
	// Sources set locally win, but the receiver is still asked for its
	// retention.
	f = &fakeConfig{vars: map[string]string{"HOOKLEDGER_SOURCES": `{"y":2}`, "HOOKLEDGER_RETENTION": "96h"}}
	if err := ReceiverSources(t.Context(), &c, f, "stack-receiver", ""); err != nil || f.asked != "stack-receiver" || c.SourcesJSON != `{"x":1}` || c.Retention != 96*time.Hour {
		t.Fatalf("local sources: %v, asked %q, %+v", err, f.asked, c)
	}
	c.SourcesJSON = ""
	if err := ReceiverSources(t.Context(), &c, &fakeConfig{err: errors.New("AccessDeniedException")}, "r", ""); err == nil || !strings.Contains(err.Error(), "lambda:GetFunctionConfiguration") {
		t.Fatalf("denied: %v", err)
	}
	if err := ReceiverSources(t.Context(), &c, &fakeConfig{vars: map[string]string{}}, "r", ""); err == nil || !strings.Contains(err.Error(), "no HOOKLEDGER_SOURCES") {
		t.Fatalf("empty: %v", err)
	}
}

// TestRetentionIsTheReceivers: the window is judged against the retention
// the deployed receiver writes records with, not the caller's own (or its
// default); a caller that says otherwise is refused.
func TestRetentionIsTheReceivers(t *testing.T) {
	t.Parallel()
	sources := `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_1"]}}}}`
	deployed := &fakeConfig{vars: map[string]string{"HOOKLEDGER_SOURCES": sources, "HOOKLEDGER_RETENTION": "96h"}}
	c := handlerConfig(t) // no HOOKLEDGER_RETENTION: 168h
	c.SourcesJSON = ""
	if err := ReceiverSources(t.Context(), &c, deployed, "stack-receiver", ""); err != nil || c.Retention != 96*time.Hour {
		t.Fatalf("retention %v, want the receiver's 96h (%v)", c.Retention, err)
	}
	srcs, _ := source.Parse([]byte(c.SourcesJSON))
	reg, _ := source.NewRegistry(srcs, &source.Secrets{})
	rc := &Config{Sources: srcs, Registry: reg, Retention: c.Retention}
	if err := rc.Check(Spec{Source: "stripe", Tenant: "acme", Credential: "literal:sk_x", Window: "160h"}); err == nil || !strings.Contains(err.Error(), "retention 96h") {
		t.Fatalf("a 160h window over a 96h ledger: %v", err)
	}
	// The receiver without HOOKLEDGER_RETENTION keeps the default.
	c = handlerConfig(t)
	c.Retention = 24 * time.Hour
	if err := ReceiverSources(t.Context(), &c, &fakeConfig{vars: map[string]string{"HOOKLEDGER_SOURCES": sources}}, "r", ""); err != nil || c.Retention != 168*time.Hour {
		t.Fatalf("receiver default: %v %v", c.Retention, err)
	}
	// A different value here is refused; the same one (any spelling) is fine.
	c = handlerConfig(t)
	if err := ReceiverSources(t.Context(), &c, deployed, "r", "168h"); err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_RETENTION=168h here") {
		t.Fatalf("differing retention: %v", err)
	}
	if err := ReceiverSources(t.Context(), &c, deployed, "r", "5760m"); err != nil {
		t.Fatalf("same retention: %v", err)
	}
	// The template writes it in days (RetentionDays) for every function,
	// the reconciler included.
	days := &fakeConfig{vars: map[string]string{"HOOKLEDGER_SOURCES": sources, "HOOKLEDGER_RETENTION": "4d"}}
	if err := ReceiverSources(t.Context(), &c, days, "r", "4d"); err != nil || c.Retention != 96*time.Hour {
		t.Fatalf("retention in days: %v %v", c.Retention, err)
	}
}
