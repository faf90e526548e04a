package source

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/hookledger/hookledger/internal/awsjson"
	"github.com/hookledger/hookledger/internal/awstest"
)

// Against the emulator's real SSM and Secrets Manager: a rotation list
// whose old secret was deleted still verifies with the new one, a secret
// scheduled for deletion stops working, and a key/value JSON secret is
// unusable as a signing secret (it used to become the HMAC key, so every
// delivery got 401).
func TestSecretStoresInTheEmulator(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	sm, ps := secretsmanager.NewFromConfig(cfg), ssm.NewFromConfig(cfg)
	base := awstest.Name("hl-secrets")
	put := func(name, value string) {
		t.Helper()
		if _, err := sm.CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)}); err != nil {
			t.Fatal(err)
		}
	}
	put(base+"/new", "whsec_new")
	put(base+"/old", "whsec_old")
	put(base+"/scheduled", "whsec_scheduled")
	put(base+"/kv", `{"signing_secret":"whsec_kv"}`)
	if _, err := ps.PutParameter(t.Context(), &ssm.PutParameterInput{Name: aws.String("/" + base + "/ssm"), Value: aws.String("whsec_ssm"),
		Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		t.Fatal(err)
	}
	// The functions' own readers (awsjson: signed requests, no SDK
	// clients) against the emulator's stores.
	s := &Secrets{SSM: awsjson.NewSSM(cfg), SecretsManager: awsjson.NewSecretsManager(cfg)}
	refs := []Ref{{SchemeSecretsManager, base + "/new"}, {SchemeSecretsManager, base + "/old"}, {SchemeSSM, "/" + base + "/ssm"}}
	if res := s.Resolve(t.Context(), refs); len(res.Values) != 3 || res.Err() != nil {
		t.Fatalf("before deletion: %v %v", res.Values, res.Err())
	}
	if _, err := sm.DeleteSecret(t.Context(), &secretsmanager.DeleteSecretInput{SecretId: aws.String(base + "/old"), ForceDeleteWithoutRecovery: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := sm.DeleteSecret(t.Context(), &secretsmanager.DeleteSecretInput{SecretId: aws.String(base + "/scheduled"), RecoveryWindowInDays: aws.Int64(7)}); err != nil {
		t.Fatal(err)
	}
	fresh := &Secrets{SSM: awsjson.NewSSM(cfg), SecretsManager: awsjson.NewSecretsManager(cfg)}
	res := fresh.Resolve(t.Context(), refs)
	if len(res.Values) != 2 || res.Values[0] != "whsec_new" || res.Values[1] != "whsec_ssm" || !res.Only(ErrSecretGone) || len(res.Errors) != 1 {
		t.Fatalf("[new, deleted-old, ssm]: %v %v, want new and ssm resolved, old gone", res.Values, res.Errors)
	}
	if _, err := fresh.Value(t.Context(), Ref{SchemeSecretsManager, base + "/scheduled"}); !errors.Is(err, ErrSecretGone) {
		t.Errorf("a secret scheduled for deletion: %v, want ErrSecretGone", err)
	}
	if res := fresh.Resolve(t.Context(), []Ref{{SchemeSecretsManager, base + "/kv"}}); len(res.Errors) != 1 || !res.Only(ErrSecretUnusable) {
		t.Errorf("a key/value JSON signing secret: %v, want ErrSecretUnusable", res.Err())
	}
	if _, err := fresh.Value(t.Context(), Ref{SchemeSSM, "/" + base + "/missing"}); !errors.Is(err, ErrSecretGone) {
		t.Errorf("a missing parameter: %v, want ErrSecretGone", err)
	}
}
