package processor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/awsjson"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/jsoncheck"
)

// EffectSettingsEnv holds the effects' settings as one JSON object of
// strings (the template sets it from the EffectSettings parameter), or an
// ssm:/secretsmanager: reference to such a document.
const EffectSettingsEnv = "HOOKLEDGER_EFFECT_SETTINGS"

// Where effect settings are set, for the errors that name a missing one.
const (
	whereDeployed = "the EffectSettings parameter (samconfig.toml: parameter_overrides of the environment you deploy)"
	whereLocal    = "the environment of hookledger dev (export NAME=value) or in " + EffectSettingsEnv + ` ({"NAME":"value"})`
)

// settingReadTimeout bounds the read of one secret reference at cold start.
const settingReadTimeout = 10 * time.Second

// Effects runs register, a func(*hookledger.Router, *hookledger.Settings)
// error, with its settings: the members of HOOKLEDGER_EFFECT_SETTINGS, or
// in a local run without it, the environment. An ssm: or secretsmanager:
// value is read when the effect asks (at cold start); deployed, it must lie
// within the role's grants (HOOKLEDGER_SECRET_GRANTS), as the receiver's.
func Effects(c config.Config, cfg aws.Config, getenv func(string) string, local bool, register any) (engine.Effects, error) {
	secrets := &source.Secrets{SSM: awsjson.NewSSM(cfg), SecretsManager: awsjson.NewSecretsManager(cfg), Getenv: getenv}
	var grants *source.Grants
	if c.SecretGrants != "" {
		g, err := source.ParseGrants(c.SecretGrants)
		if err != nil {
			return engine.Effects{}, err
		}
		grants = &g
	}
	where := whereDeployed
	if local {
		where = whereLocal
	}
	raw := getenv(EffectSettingsEnv)
	var values map[string]string
	switch {
	case strings.TrimSpace(raw) != "":
		doc, err := readDocument(raw, secrets, grants)
		if err != nil {
			return engine.Effects{}, err
		}
		if values, err = parseSettings(doc); err != nil {
			return engine.Effects{}, err
		}
	case !local:
		values = map[string]string{} // deployed with no settings: every read is missing
	}
	lookup := func(name string) (string, error) {
		v := getenv(name)
		if values != nil {
			v = values[name]
		}
		if !looksLikeRef(v) {
			return v, nil
		}
		ref, err := source.ParseRef(strings.TrimSpace(v))
		if err != nil {
			return "", err
		}
		if ref.Scheme != source.SchemeSSM && ref.Scheme != source.SchemeSecretsManager {
			return "", fmt.Errorf("%s: an effect setting is either a plain value or an ssm: or secretsmanager: reference", ref)
		}
		if grants != nil {
			if err := grants.Check(ref); err != nil {
				return "", err
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), settingReadTimeout)
		defer cancel()
		return secrets.Value(ctx, ref)
	}
	return engine.EffectsOf(register, lookup, where)
}

// readDocument returns the settings JSON, read from the store when raw is a
// reference to it.
func readDocument(raw string, secrets *source.Secrets, grants *source.Grants) (string, error) {
	t := strings.TrimSpace(raw)
	if !looksLikeRef(t) {
		return raw, nil
	}
	ref, err := source.ParseRef(t)
	if err != nil {
		return "", fmt.Errorf("%s: %w", EffectSettingsEnv, err)
	}
	if grants != nil {
		if err := grants.Check(ref); err != nil {
			return "", fmt.Errorf("%s: %w", EffectSettingsEnv, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), settingReadTimeout)
	defer cancel()
	doc, err := secrets.Document(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("%s: read the effect settings from %s: %w", EffectSettingsEnv, ref, err)
	}
	return doc, nil
}

// parseSettings reads the settings document: one JSON object whose members
// are strings, no member twice.
func parseSettings(doc string) (map[string]string, error) {
	const want = `want one JSON object of strings, e.g. {"PAYMENTS_URL":"https://payments.example.com","PAYMENTS_KEY":"ssm:/hookledger/prod/payments-key"}`
	if err := jsoncheck.Strict([]byte(doc)); err != nil {
		return nil, fmt.Errorf("%s: %w (%s)", EffectSettingsEnv, err, want)
	}
	var values map[string]string
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	if err := dec.Decode(&values); err != nil || values == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return nil, fmt.Errorf("%s: %v (%s)", EffectSettingsEnv, err, want)
	}
	return values, nil
}

// looksLikeRef reports whether v is meant as a secret reference: the
// schemes a setting may use, in any case, and the ARNs of the two stores.
func looksLikeRef(v string) bool {
	t := strings.ToLower(strings.TrimSpace(v))
	for _, p := range []string{"ssm:", "secretsmanager:", "arn:aws:ssm:", "arn:aws:secretsmanager:"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}
