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
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awsjson"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
)

// FromConfig builds the receiver at cold start: it validates the
// configuration, builds every source's verifier once, and creates the AWS
// clients. It is not in package config, so that the other functions' binaries
// do not link the secret stores' SDKs.
func FromConfig(c config.Config, cfg aws.Config, getenv func(string) string, log *slog.Logger) (*Handler, error) {
	if err := c.ValidateReceiver(); err != nil {
		return nil, err
	}
	reg, grants, err := LoadSources(c, cfg, getenv)
	if err != nil {
		return nil, err
	}
	if grants != nil {
		if err := reg.CheckGrants(*grants); err != nil {
			return nil, fmt.Errorf("sources config: every delivery of these tenants would get 503 on AWS (AccessDenied):\n%w", err)
		}
	}
	if c.FunctionName != "" && getenv("AWS_ENDPOINT_URL") == "" {
		// Deployed on AWS (an emulator sets AWS_ENDPOINT_URL).
		if err := reg.CheckStored(); err != nil {
			return nil, fmt.Errorf("sources config: signing secrets must come from a secret store on AWS:\n%w", err)
		}
	}
	l, err := NewLedger(reg, c, cfg, log)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		Sources: reg, Ledger: l, Queue: &queue.Sender{API: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		MaxBody: c.MaxBody, Mismatch: c.Mismatch, Payload: c.Payload, Log: log, Metrics: c.Metrics(),
	}
	if h.Trace, err = c.Tracer(cfg, "receiver", log); err != nil {
		return nil, err
	}
	if c.PayloadBucket != "" {
		h.Store, h.StoreAbove = &blob.Store{API: blob.NewClient(cfg), Bucket: c.PayloadBucket, Prefix: c.PayloadPrefix}, c.PayloadStoreAbove
	}
	return h, nil
}

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
