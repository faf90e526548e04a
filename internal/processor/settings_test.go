package processor_test

import (
	"github.com/hookledger/hookledger"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/processor"
)

// secretLike stands for a secret that no error may quote.
const secretLike = "sk_live_51ProcessorLeakCanary"

// Effect settings read from the emulator's real stores: a URL stored from
// a file (a trailing newline, credentials in it) and a settings document
// kept in SSM are described, never quoted, and a JSON secret asked for as
// a string is the effect's to read. Before, the URL was quoted whole in the
// cold-start error, and the JSON secret was refused as a signing secret.
func TestEffectSettingsFromStoresNeverQuoteAValue(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	base := "/" + awstest.Name("hl-settings")
	ps, sm := ssm.NewFromConfig(cfg), secretsmanager.NewFromConfig(cfg)
	fromFile := "https://user:" + secretLike + "@pay.example.com/\n"
	jsonDoc := `{"client_id":"c","client_secret":"` + secretLike + `"}`
	for name, value := range map[string]string{
		base + "/payments-url": fromFile,
		base + "/settings":     `{"PAYMENTS_URL":"ssm:` + base + `/payments-url","DOC_URL":"https://user:` + secretLike + `@x.example.com/\n","CLIENT":"secretsmanager:` + base[1:] + `/client"}`,
		base + "/broken":       `{"PAYMENTS_URL":"` + secretLike + `","PAYMENTS_URL":"x"}`,
	} {
		if _, err := ps.PutParameter(t.Context(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: ssmtypes.ParameterTypeSecureString}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sm.CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: aws.String(base[1:] + "/client"), SecretString: aws.String(jsonDoc)}); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	_, err := processor.Effects(config.Config{}, cfg, env(map[string]string{processor.EffectSettingsEnv: "ssm:" + base + "/settings"}), false,
		func(_ *hookledger.Router, s *hookledger.Settings) error {
			if got := s.String("CLIENT"); got != jsonDoc {
				t.Errorf("CLIENT (a JSON secret asked for as a string) = %q, want the document", got)
			}
			s.URL("PAYMENTS_URL")
			s.URL("DOC_URL")
			s.URL("CLIENT")
			return s.Err()
		})
	for _, want := range []string{"PAYMENTS_URL ends with a newline", "DOC_URL ends with a newline", "CLIENT is not a URL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %v, want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), secretLike) {
		t.Errorf("Err() quotes a value: %v", err)
	}
	// A settings document that does not parse names the problem only.
	_, err = processor.Effects(config.Config{}, cfg, env(map[string]string{processor.EffectSettingsEnv: "ssm:" + base + "/broken"}), false,
		func(*hookledger.Router, *hookledger.Settings) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "appears twice") || strings.Contains(err.Error(), secretLike) {
		t.Errorf("a broken settings document: %v, want the problem without the value", err)
	}
}
