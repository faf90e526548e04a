package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
)

// Settings are the reconciler's own environment variables, read in main.
type Settings struct {
	Specs            string // HOOKLEDGER_RECONCILE: the JSON array of Spec
	ReceiverFunction string // HOOKLEDGER_RECEIVER_FUNCTION: feed by invoking the receiver function
	WebhookURL       string // HOOKLEDGER_WEBHOOK_URL: or feed by posting to the webhook URL
}

// LoadSettings reads Settings through getenv.
func LoadSettings(getenv func(string) string) Settings {
	return Settings{Specs: getenv("HOOKLEDGER_RECONCILE"), ReceiverFunction: getenv("HOOKLEDGER_RECEIVER_FUNCTION"), WebhookURL: getenv("HOOKLEDGER_WEBHOOK_URL")}
}

// NewConfig parses the sources and builds the secret resolver and the
// ledger from the core configuration. It makes no network call.
func NewConfig(c config.Config, cfg aws.Config, getenv func(string) string) (*Config, *ledger.Ledger, error) {
	if err := c.ValidateReconciler(); err != nil {
		return nil, nil, err
	}
	srcs, err := source.Parse([]byte(c.SourcesJSON))
	if err != nil {
		return nil, nil, err
	}
	secrets := &source.Secrets{SSM: ssm.NewFromConfig(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), Getenv: getenv}
	reg, err := source.NewRegistry(srcs, secrets)
	if err != nil {
		return nil, nil, err
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		return nil, nil, err
	}
	return &Config{Sources: srcs, Registry: reg, Secrets: secrets, Retention: c.Retention, Client: &http.Client{Timeout: 30 * time.Second}}, l, nil
}

// FromConfig builds the scheduled reconciler function's handler. Every
// spec is checked now, so a misconfiguration stops the function at cold
// start with a message naming the fix.
func FromConfig(c config.Config, s Settings, cfg aws.Config, getenv func(string) string, log *slog.Logger) (*Handler, error) {
	rc, l, err := NewConfig(c, cfg, getenv)
	if err != nil {
		return nil, err
	}
	if s.Specs == "" {
		return nil, errors.New("HOOKLEDGER_RECONCILE is empty: set it (template parameter ReconcileConfig) to a JSON array such as [{\"source\":\"stripe\",\"tenant\":\"acme\",\"credential\":\"ssm:/hookledger/acme/stripe-api\"}]")
	}
	specs, err := ParseSpecs([]byte(s.Specs))
	if err != nil {
		return nil, fmt.Errorf("HOOKLEDGER_RECONCILE: %w", err)
	}
	if len(specs) == 0 {
		return nil, errors.New("HOOKLEDGER_RECONCILE lists no source to reconcile")
	}
	var errs []error
	for _, sp := range specs {
		if err := rc.Check(sp); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("HOOKLEDGER_RECONCILE: %w", err)
	}
	var feeder Feeder
	switch {
	case s.ReceiverFunction != "":
		feeder = &LambdaFeeder{API: lambda.NewFromConfig(cfg), Function: s.ReceiverFunction}
	case s.WebhookURL != "":
		if err := ParseWebhookURL(s.WebhookURL); err != nil {
			return nil, fmt.Errorf("HOOKLEDGER_WEBHOOK_URL: %w", err)
		}
		feeder = &HTTPFeeder{Webhook: s.WebhookURL, Client: &http.Client{Timeout: 30 * time.Second}}
	default:
		return nil, errors.New("set HOOKLEDGER_RECEIVER_FUNCTION (the receiver function's name) or HOOKLEDGER_WEBHOOK_URL (the stack's WebhookUrl) so missing events can be fed through the receiver")
	}
	return &Handler{Config: rc, Specs: specs, Reconciler: &Reconciler{Ledger: l, Feeder: feeder, Log: log}, Metrics: c.Metrics(), Log: log}, nil
}

// Handler is the scheduled reconciler: one run reconciles every configured
// source and tenant.
type Handler struct {
	Config     *Config
	Specs      []Spec
	Reconciler *Reconciler
	Metrics    *metric.Emitter // nil: no metrics
	Log        *slog.Logger
}

// Summary is a scheduled run's result.
type Summary struct {
	Reports []Report `json:"reports"`
	Errors  []string `json:"errors,omitempty"`
}

// Handle runs every spec. Each adds its counts to the metrics
// ReconcileSeen, ReconcileMissing (events the front door lost: alarmed),
// ReconcileRecovered and ReconcileFailed. It returns an error when any spec
// could not run or any missing event could not be fed, so the function's
// Errors alarm fires too.
func (h *Handler) Handle(ctx context.Context, _ json.RawMessage) (Summary, error) {
	sum := Summary{Reports: []Report{}}
	var errs []error
	for _, sp := range h.Specs {
		log := h.Log.With("source", sp.Source, "tenant", sp.Tenant)
		job, err := h.Config.Job(ctx, sp, false)
		var rep Report
		if err == nil {
			rep, err = h.Reconciler.Run(ctx, job)
			sum.Reports = append(sum.Reports, rep)
		}
		h.Metrics.Add(map[string]int{"ReconcileSeen": rep.Seen, "ReconcileMissing": rep.Missing,
			"ReconcileRecovered": rep.Recovered(), "ReconcileFailed": rep.Failed + boolInt(err != nil)})
		attrs := []any{"provider", rep.Provider, "since", rep.Since, "seen", rep.Seen, "in_ledger", rep.InLedger,
			"missing", rep.Missing, "fed", rep.Fed, "duplicate", rep.Duplicate, "requested", rep.Requested,
			"failed", rep.Failed, "too_recent", rep.TooRecent, "too_old", rep.TooOld}
		switch {
		case err != nil:
			errs = append(errs, err)
			sum.Errors = append(sum.Errors, err.Error())
			log.ErrorContext(ctx, "reconcile failed", append(attrs, "error", err.Error())...)
		case rep.Failed > 0:
			errs = append(errs, fmt.Errorf("reconcile %s/%s: %d missing events could not be fed", sp.Source, sp.Tenant, rep.Failed))
			log.ErrorContext(ctx, "reconcile: missing events could not be fed", attrs...)
		case rep.Missing > 0:
			log.WarnContext(ctx, "reconcile: the front door lost events; recovered", attrs...)
		default:
			log.InfoContext(ctx, "reconcile: nothing missing", attrs...)
		}
	}
	return sum, errors.Join(errs...)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
