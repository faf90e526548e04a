package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/hookledger/hookledger/internal/awsjson"
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
	// CredentialGrants is HOOKLEDGER_RECONCILE_GRANTS: what the role may
	// read for credentials (template.yaml sets it; unset: not checked).
	CredentialGrants string
	// Schedule is HOOKLEDGER_RECONCILE_SCHEDULE, the function's schedule;
	// Config.Check refuses a spec that leaves gaps between runs.
	Schedule string
}

// LoadSettings reads Settings through getenv.
func LoadSettings(getenv func(string) string) Settings {
	return Settings{Specs: getenv("HOOKLEDGER_RECONCILE"), ReceiverFunction: getenv("HOOKLEDGER_RECEIVER_FUNCTION"),
		WebhookURL: getenv("HOOKLEDGER_WEBHOOK_URL"), CredentialGrants: getenv("HOOKLEDGER_RECONCILE_GRANTS"),
		Schedule: getenv("HOOKLEDGER_RECONCILE_SCHEDULE")}
}

// NewConfig parses the sources (the JSON, or a reference to it) and builds
// the secret resolver and the ledger. With HOOKLEDGER_SECRET_GRANTS set,
// tenants' references are checked against it, as the receiver does.
func NewConfig(c config.Config, cfg aws.Config, getenv func(string) string) (*Config, *ledger.Ledger, error) {
	if err := c.ValidateReconciler(); err != nil {
		return nil, nil, err
	}
	secrets := &source.Secrets{SSM: awsjson.NewSSM(cfg), SecretsManager: awsjson.NewSecretsManager(cfg), Getenv: getenv}
	srcs, reg, grants, err := source.Load(c.SourcesJSON, c.SecretGrants, secrets)
	if err != nil {
		return nil, nil, err
	}
	if grants != nil {
		if err := reg.CheckGrants(*grants); err != nil {
			return nil, nil, fmt.Errorf("sources config: the reconciler could not read these signing secrets (AccessDenied on AWS):\n%w", err)
		}
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		return nil, nil, err
	}
	return &Config{Sources: srcs, Registry: reg, Secrets: secrets, Retention: c.Retention, Client: &http.Client{Timeout: 30 * time.Second}}, l, nil
}

// configReader is the slice of the Lambda client ReceiverSources calls.
type configReader interface {
	GetFunctionConfiguration(ctx context.Context, in *lambda.GetFunctionConfigurationInput, opts ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error)
}

var _ configReader = (*lambda.Client)(nil)

// ReceiverSources reads the receiver function's configuration. Without
// sources in c it takes the receiver's HOOKLEDGER_SOURCES and
// HOOKLEDGER_SECRET_GRANTS, so the reconciler signs exactly as the receiver
// verifies, and its own environment stays under Lambda's 4 KB. It always
// takes the receiver's HOOKLEDGER_RETENTION: a window is safe only inside
// the retention records are written with. own, the caller's
// HOOKLEDGER_RETENTION ("" when unset), must not differ from it.
func ReceiverSources(ctx context.Context, c *config.Config, api configReader, function, own string) error {
	out, err := api.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: &function})
	if err != nil {
		return fmt.Errorf("read the configuration of the receiver function %s: %w (the reconciler needs lambda:GetFunctionConfiguration on it: it takes the receiver's HOOKLEDGER_RETENTION, and its HOOKLEDGER_SOURCES unless set here)", function, err)
	}
	var vars map[string]string
	if out.Environment != nil {
		vars = out.Environment.Variables
	}
	deployed, err := receiverRetention(vars["HOOKLEDGER_RETENTION"])
	if err != nil {
		return fmt.Errorf("the receiver function %s: %w", function, err)
	}
	if own = strings.TrimSpace(own); own != "" {
		d, err := receiverRetention(own)
		if err != nil || d != deployed {
			return fmt.Errorf("HOOKLEDGER_RETENTION=%s here, but the receiver function %s keeps ledger records %v: a window judged against the wrong retention could feed events whose records expired, running their effects twice; unset HOOKLEDGER_RETENTION (the receiver's is used) or set it to %v",
				own, function, deployed, deployed)
		}
	}
	if c.SourcesJSON == "" {
		if vars["HOOKLEDGER_SOURCES"] == "" {
			return fmt.Errorf("the receiver function %s has no HOOKLEDGER_SOURCES; set HOOKLEDGER_SOURCES for the reconciler", function)
		}
		c.SourcesJSON, c.SecretGrants = vars["HOOKLEDGER_SOURCES"], vars["HOOKLEDGER_SECRET_GRANTS"]
	}
	c.Retention = deployed
	return nil
}

// receiverRetention is the retention of a receiver with HOOKLEDGER_RETENTION=v.
func receiverRetention(v string) (time.Duration, error) {
	c, err := config.Load(func(k string) string {
		if k == "HOOKLEDGER_RETENTION" {
			return v
		}
		return ""
	})
	if err != nil {
		return 0, err
	}
	return c.Retention, nil
}

// ParseSchedule returns the interval of a rate(N unit) schedule
// expression; a cron() expression gives 0 (its longest gap is not computed).
func ParseSchedule(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" || strings.HasPrefix(v, "cron(") && strings.HasSuffix(v, ")") {
		return 0, nil
	}
	inner, ok := strings.CutPrefix(v, "rate(")
	if inner, ok2 := strings.CutSuffix(inner, ")"); ok && ok2 {
		f := strings.Fields(inner)
		if len(f) == 2 {
			n, err := strconv.Atoi(f[0])
			unit := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour, "hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[f[1]]
			if err == nil && n > 0 && unit > 0 {
				return time.Duration(n) * unit, nil
			}
		}
	}
	return 0, fmt.Errorf("HOOKLEDGER_RECONCILE_SCHEDULE %q: want an EventBridge schedule expression, rate(1 hour) or cron(...)", v)
}

// FromConfig builds the scheduled reconciler's handler; without
// HOOKLEDGER_SOURCES it reads the receiver function's. Every spec is
// checked here, so a misconfiguration stops the cold start.
func FromConfig(c config.Config, s Settings, cfg aws.Config, getenv func(string) string, log *slog.Logger) (*Handler, error) {
	lam := lambda.NewFromConfig(cfg)
	if s.ReceiverFunction != "" && c.SourcesJSON == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var own string
		if getenv != nil {
			own = getenv("HOOKLEDGER_RETENTION")
		}
		err := ReceiverSources(ctx, &c, lam, s.ReceiverFunction, own)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	rc, l, err := NewConfig(c, cfg, getenv)
	if err != nil {
		return nil, err
	}
	if s.CredentialGrants != "" {
		g, err := source.ParseGrantsFor(s.CredentialGrants, source.ReconcileCredentialGrants)
		if err != nil {
			return nil, err
		}
		rc.CredentialGrants = &g
	}
	interval, err := ParseSchedule(s.Schedule)
	if err != nil {
		return nil, err
	}
	rc.Interval = interval
	if s.Specs == "" {
		return nil, errors.New("HOOKLEDGER_RECONCILE is empty: set it (template parameter ReconcileConfig) to a JSON array such as [{\"source\":\"stripe\",\"tenant\":\"acme\",\"credential\":\"ssm:/hookledger/prod/reconcile/acme/stripe-api\"}]")
	}
	specs, err := ParseSpecs([]byte(s.Specs))
	if err != nil {
		return nil, fmt.Errorf("HOOKLEDGER_RECONCILE: %w", err)
	}
	if len(specs) == 0 {
		return nil, errors.New("HOOKLEDGER_RECONCILE lists no source to reconcile")
	}
	onAWS := c.FunctionName != "" && (getenv == nil || getenv("AWS_ENDPOINT_URL") == "") // an emulator sets the endpoint
	var errs []error
	for _, sp := range specs {
		if err := rc.Check(sp); err != nil {
			errs = append(errs, err)
			continue
		}
		if ref, err := source.ParseRef(sp.Credential); err == nil && onAWS && (ref.Scheme == source.SchemeLiteral || ref.Scheme == source.SchemeEnv) {
			errs = append(errs, fmt.Errorf("reconcile %s/%s: a %s: credential is plain text in the stack's parameters and the function's configuration; store it in SSM (ssm:/...) or Secrets Manager (secretsmanager:...) under the reconcile/ path of SecretsPrefix (docs/reconcile.md)",
				sp.Source, sp.Tenant, ref.Scheme))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("HOOKLEDGER_RECONCILE: %w", err)
	}
	if onAWS && rc.Registry != nil {
		if err := rc.Registry.CheckStored(); err != nil {
			return nil, fmt.Errorf("sources config: signing secrets must come from a secret store on AWS:\n%w", err)
		}
	}
	var feeder Feeder
	switch {
	case s.ReceiverFunction != "":
		feeder = &LambdaFeeder{API: lam, Function: s.ReceiverFunction}
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

// Handler is the scheduled reconciler: a run reconciles every spec.
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

// Handle runs every spec, adding its counts to the metrics ReconcileSeen,
// ReconcileMissing (what the front door lost: alarmed), ReconcileRecovered,
// ReconcileRequested and ReconcileFailed. It fails when a spec could not
// run or a missing event could not be fed, so the Errors alarm fires too.
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
		h.Metrics.AddAll(map[string]int{"ReconcileSeen": rep.Seen, "ReconcileMissing": rep.Missing,
			"ReconcileRecovered": rep.Recovered(), "ReconcileRequested": rep.Requested, "ReconcileFailed": rep.Failed + boolInt(err != nil)})
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
		case rep.Missing > 0 && rep.Requested > 0:
			log.WarnContext(ctx, "reconcile: the front door lost events; redelivery requested from the provider", attrs...)
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
