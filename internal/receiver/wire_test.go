package receiver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
)

func TestFromConfig(t *testing.T) {
	t.Parallel()
	c, err := config.Load(func(k string) string {
		return map[string]string{
			"HOOKLEDGER_QUEUE_URL": "http://localhost:4566/000000000000/q",
			"HOOKLEDGER_SOURCES":   `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_x"]}}}}`,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	// Unset settings reach the handler as its zero values, which are its
	// own defaults (DefaultMaxBody, MismatchFlag): written once, here.
	h, err := receiver.FromConfig(c, aws.Config{Region: "us-east-1"}, func(string) string { return "" }, nil)
	if err != nil || h.MaxBody != 0 || h.Mismatch != "" || h.Sources == nil || h.Ledger == nil || h.Queue == nil {
		t.Fatalf("%+v %v", h, err)
	}
	post := func(h *receiver.Handler, n int) int {
		resp, _ := h.Handle(t.Context(), events.APIGatewayV2HTTPRequest{RawPath: "/webhooks/stripe/acme", Body: strings.Repeat("x", n),
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/webhooks/stripe/acme"}}})
		return resp.StatusCode
	}
	if code := post(h, receiver.DefaultMaxBody+1); code != 413 {
		t.Errorf("a body of DefaultMaxBody+1 bytes: %d, want 413", code)
	}
	if code := post(h, receiver.DefaultMaxBody); code == 413 {
		t.Errorf("a body of DefaultMaxBody bytes: 413")
	}
	c2 := c
	c2.MaxBody, c2.Mismatch = 2*receiver.DefaultMaxBody, receiver.MismatchReject
	if h, err := receiver.FromConfig(c2, aws.Config{Region: "us-east-1"}, func(string) string { return "" }, nil); err != nil ||
		h.MaxBody != 2*receiver.DefaultMaxBody || h.Mismatch != receiver.MismatchReject {
		t.Fatalf("set values: %+v %v", h, err)
	}
	c.SourcesJSON = `{"stripe":{"provider":"nope","tenants":{"acme":{"secrets":["literal:x"]}}}}`
	if _, err := receiver.FromConfig(c, aws.Config{}, nil, nil); err == nil || !strings.Contains(err.Error(), "stripe") {
		t.Fatalf("bad provider: %v", err)
	}
}

// A reference outside what the template grants fails the cold start with a
// message naming the fix; before, every delivery of that tenant got 503
// (AccessDenied) on AWS while the local deploy, without IAM, passed.
func TestFromConfigRefusesReferencesOutsideTheGrants(t *testing.T) {
	t.Parallel()
	c, err := config.Load(func(k string) string {
		return map[string]string{
			"HOOKLEDGER_QUEUE_URL":     "http://localhost:4566/000000000000/q",
			"HOOKLEDGER_SOURCES":       `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["ssm:/hookledger/acme/stripe"]},"globex":{"secrets":["secretsmanager:hookledger/prod/stripe/globex"]}}}}`,
			"HOOKLEDGER_SECRET_GRANTS": "ssm=/hookledger/prod;secretsmanager_prefix=hookledger/prod/;except=reconcile/",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = receiver.FromConfig(c, aws.Config{Region: "us-east-1"}, func(string) string { return "" }, nil)
	if err == nil || !strings.Contains(err.Error(), "ssm:/hookledger/acme/stripe") || !strings.Contains(err.Error(), "SecretsPrefix=hookledger/acme") ||
		strings.Contains(err.Error(), "globex") {
		t.Fatalf("FromConfig: %v; want the acme reference named with the fix, and globex (granted) not", err)
	}
}

// Past Lambda's 4 KB environment, HOOKLEDGER_SOURCES names an SSM parameter
// (or a Secrets Manager secret) that holds the JSON.
func TestSourcesJSONFromSSM(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	name := "/" + awstest.Name("hl-sources") + "/sources"
	big := `{"stripe":{"provider":"stripe","tenants":{` + tenants(120) + `}}}`
	if len(big) < 4096 {
		t.Fatalf("test sources are only %d bytes", len(big))
	}
	if _, err := ssm.NewFromConfig(cfg).PutParameter(t.Context(), &ssm.PutParameterInput{Name: &name, Value: &big,
		Type: ssmtypes.ParameterTypeSecureString, Tier: ssmtypes.ParameterTierAdvanced}); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(func(k string) string {
		return map[string]string{"HOOKLEDGER_QUEUE_URL": "http://localhost:4566/000000000000/q", "HOOKLEDGER_SOURCES": "ssm:" + name}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := receiver.FromConfig(c, cfg, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Sources.(*source.Registry).Verifier("stripe", "t119"); err != nil {
		t.Errorf("tenant from the SSM sources JSON: %v", err)
	}
	c.SecretGrants = "ssm=/elsewhere"
	if _, err := receiver.FromConfig(c, cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_SOURCES") {
		t.Errorf("sources JSON outside the grant: %v", err)
	}
}

func tenants(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"t%d":{"secrets":["ssm:/hookledger/prod/stripe/t%d"]}`, i, i)
	}
	return b.String()
}

// On AWS (in Lambda, no emulator endpoint) a literal: or env: signing
// secret is plain text in the function's configuration: the cold start
// refuses it and names the secret stores. Local runs and emulators may
// use them.
func TestFromConfigRefusesPlainSecretsOnAWS(t *testing.T) {
	t.Parallel()
	env := func(extra map[string]string) func(string) string {
		m := map[string]string{
			"HOOKLEDGER_QUEUE_URL":     "https://sqs.us-east-1.amazonaws.com/123456789012/q",
			"HOOKLEDGER_SOURCES":       `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_x"]},"globex":{"secrets":["env:GLOBEX"]},"initech":{"secrets":["ssm:/hookledger/prod/initech"]}}}}`,
			"AWS_LAMBDA_FUNCTION_NAME": "hookledger-receiver",
		}
		for k, v := range extra {
			m[k] = v
		}
		return func(k string) string { return m[k] }
	}
	c, err := config.Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = receiver.FromConfig(c, aws.Config{Region: "us-east-1"}, env(nil), nil)
	if err == nil || !strings.Contains(err.Error(), `tenant "acme": a literal: secret`) || !strings.Contains(err.Error(), `tenant "globex": a env: secret`) ||
		strings.Contains(err.Error(), "initech") || !strings.Contains(err.Error(), "Secrets Manager") {
		t.Fatalf("FromConfig on AWS: %v; want acme and globex refused with the fix, initech not", err)
	}
	local := env(map[string]string{"AWS_ENDPOINT_URL": "http://localhost:4566"})
	if _, err := receiver.FromConfig(c, aws.Config{Region: "us-east-1"}, local, nil); err != nil {
		t.Fatalf("against an emulator: %v", err)
	}
}
