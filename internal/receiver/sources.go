package receiver

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/internal/awsjson"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
)

// LoadSources reads the sources JSON (from its store when HOOKLEDGER_SOURCES
// is a reference) and builds every source's verifier once. It returns the
// grants too (nil: none). The receiver and the bus door load sources by it.
func LoadSources(c config.Config, cfg aws.Config, getenv func(string) string) (*source.Registry, *source.Grants, error) {
	secrets := &source.Secrets{SSM: awsjson.NewSSM(cfg), SecretsManager: awsjson.NewSecretsManager(cfg), Getenv: getenv}
	_, reg, grants, err := source.Load(c.SourcesJSON, c.SecretGrants, secrets)
	return reg, grants, err
}

// NewLedger is the ledger of the configuration, with each source's
// retention (SourceRetention), as the receiver and the bus door use it.
func NewLedger(reg *source.Registry, c config.Config, cfg aws.Config, log *slog.Logger) (*ledger.Ledger, error) {
	opts := c.LedgerOptions()
	var err error
	if opts.SourceRetention, err = SourceRetention(reg, c, log); err != nil {
		return nil, err
	}
	return ledger.New(dynamodb.NewFromConfig(cfg), opts)
}

// SourceRetention is each source's retention, logged at cold start with its
// reason, so a default raised to a provider's retry horizon is never silent.
// It refuses a source whose records would outlive the S3 payload store's
// lifecycle rule: their bodies would expire first.
func SourceRetention(reg *source.Registry, c config.Config, log *slog.Logger) (map[string]time.Duration, error) {
	if log == nil {
		log = slog.Default()
	}
	rs := reg.Retentions(c.Retention)
	out := make(map[string]time.Duration, len(rs))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(rs)) {
		d := rs[name].Duration
		out[name] = d
		log.Info("source retention", "source", name, "retention", d.String(), "reason", rs[name].Reason)
		// In days: a Duration of PayloadStoreDays overflows past 106,751.
		if need := int((d + 24*time.Hour - 1) / (24 * time.Hour)); c.PayloadBucket != "" && c.PayloadStoreDays > 0 && c.PayloadStoreDays < need {
			errs = append(errs, fmt.Errorf("source %q: its records live %v (%s), longer than the S3 payload store keeps bodies "+
				"(HOOKLEDGER_PAYLOAD_STORE_DAYS=%d): raise LargeBodyStoreDays to at least %d, or lower the source's \"retention\"",
				name, d, rs[name].Reason, c.PayloadStoreDays, need))
		}
	}
	return out, errors.Join(errs...)
}
