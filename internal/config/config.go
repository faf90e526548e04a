// Package config holds hookledger's core settings, read from the environment
// once in main, with defaults and validation. It builds nothing and knows no
// effect: handler packages build from it (FromConfig).
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/jsoncheck"
	"github.com/hookledger/hookledger/ledger"
)

// MaxBodyLimit is the largest HOOKLEDGER_MAX_BODY without the payload
// store: a payload is one DynamoDB item (400 KB) after gzip, and JSON rarely
// compresses better than 3-4x. Above about 390 KiB the receiver answers 413
// to bodies that do not compress enough.
const MaxBodyLimit = 1 << 20

// MaxBodyWithStore is the largest HOOKLEDGER_MAX_BODY with the S3 payload
// store: the 6 MB a Lambda function can receive, event JSON included.
const MaxBodyWithStore = 6 << 20

// Payload policies (HOOKLEDGER_PAYLOAD): when a new event's body is stored in the ledger.
const (
	// PayloadAlways stores every body as the event is received, in parallel
	// with the enqueue: every event, done ones included, keeps its body for
	// inspection and replay until it expires.
	PayloadAlways = "always"
	// PayloadOnTrouble stores a body only when the event may need it again
	// (a failed enqueue, a duplicate of a received record, a redelivery, a
	// handler failure, a dead event).
	PayloadOnTrouble = "on-trouble"
)

// DefaultPayloadPrefix is the key prefix of the S3 payload store.
const DefaultPayloadPrefix = "payloads/"

// Defaults of the settings this package uses itself. Others stay zero here
// and take the default of the code that uses them (receiver.DefaultMaxBody,
// reclaimer.DefaultPerShard, ...), so each default is written once.
const (
	DefaultTable    = "hookledger" // HOOKLEDGER_TABLE, outside the template (hookledger dev)
	DefaultLogLevel = "info"
	DefaultStage    = "local"
	DefaultPayload  = PayloadOnTrouble // a receiver's whose Payload is "" too
)

// Off is what a count whose 0 turns its feature off holds when set to 0: the
// handlers read a negative as off, and a zero as unset.
const Off = -1

// Config is every setting, with its environment variable. A zero field is
// an unset variable: the default of the code that uses it.
type Config struct {
	Table           string        // HOOKLEDGER_TABLE (default DefaultTable)
	QueueURL        string        // HOOKLEDGER_QUEUE_URL (receiver, reclaimer)
	DLQURL          string        // HOOKLEDGER_DLQ_URL (reclaimer; unset: it does not read the dead-letter queue, and hookledger dev takes the queue's redrive target)
	BusDLQURL       string        // HOOKLEDGER_BUS_DLQ_URL: the bus door's dead-letter queue, where it parks the events it cannot take (bus)
	ForwardBus      string        // HOOKLEDGER_FORWARD_BUS: the EventBridge bus Event.Forward publishes to (processor; unset: Forward fails, saying so)
	SourcesJSON     string        // HOOKLEDGER_SOURCES (JSON, or an ssm:/secretsmanager: reference to it), or the file HOOKLEDGER_SOURCES_FILE (receiver)
	SecretGrants    string        // HOOKLEDGER_SECRET_GRANTS: what the deployed role may read (template.yaml sets it; unset: not checked)
	MaxBody         int           // HOOKLEDGER_MAX_BODY bytes (0: receiver.DefaultMaxBody)
	Retention       time.Duration // HOOKLEDGER_RETENTION, days ("7d") or a Go duration (default ledger.DefaultRetention)
	Shards          int           // HOOKLEDGER_SHARDS (default ledger.DefaultShards)
	ReclaimAfter    time.Duration // HOOKLEDGER_RECLAIM_AFTER (default ledger.DefaultReclaimAfter)
	Mismatch        string        // HOOKLEDGER_MISMATCH: flag ("": the receiver's default, flag) or reject
	MaxAttempts     int           // HOOKLEDGER_MAX_ATTEMPTS: how many times the handler may fail an event before it is dead (0: processor.DefaultMaxAttempts)
	ReclaimBatch    int           // HOOKLEDGER_RECLAIM_BATCH due records read per shard query (0: reclaimer.DefaultPerShard)
	ReclaimMaxQueue int           // HOOKLEDGER_RECLAIM_MAX_QUEUE: the queue depth at which re-driving pauses (0: reclaimer.DefaultMaxQueue; Off: never)
	ReclaimChain    int           // HOOKLEDGER_RECLAIM_CHAIN: continuations a scheduled reclaimer run may start (0: reclaimer.DefaultMaxChain; Off: none)
	FunctionName    string        // AWS_LAMBDA_FUNCTION_NAME, set by Lambda; the reclaimer invokes itself by it
	Lease           time.Duration // HOOKLEDGER_LEASE, used outside Lambda (0: processor.DefaultLease)
	Unrouted        string        // HOOKLEDGER_UNROUTED: done ("": the processor's default, done) or fail, for events no route matches
	Payload         string        // HOOKLEDGER_PAYLOAD: on-trouble (DefaultPayload) or always (receiver)
	PayloadBucket   string        // HOOKLEDGER_PAYLOAD_BUCKET, the S3 payload store (empty: none; what a ledger item cannot hold gets 413)
	PayloadPrefix   string        // HOOKLEDGER_PAYLOAD_PREFIX, the store's key prefix (default DefaultPayloadPrefix)
	// PayloadStoreAbove (HOOKLEDGER_PAYLOAD_STORE_ABOVE, bytes): bodies whose
	// stored (compressed) size exceeds it go to the store even when a ledger
	// item could hold them; 0 (default): only those it cannot.
	PayloadStoreAbove int
	// PayloadStoreDays (HOOKLEDGER_PAYLOAD_STORE_DAYS) is how long the bucket
	// keeps objects; the receiver refuses a store that forgets bodies before
	// their records (0: not checked).
	PayloadStoreDays int
	LogLevel         string // LOG_LEVEL: debug, info (DefaultLogLevel), warn, error
	Stage            string // HOOKLEDGER_STAGE, the metrics' Stage dimension (default DefaultStage)
	EmitMetrics      bool   // write CloudWatch EMF lines: in Lambda, or with HOOKLEDGER_METRICS=1
	// Spans (HOOKLEDGER_SPANS) is where spans go: trace.XRay, or a
	// collector's OTLP/HTTP traces URL; "" (default): no spans.
	Spans string
}

// SettingsVar holds settings as one JSON object keyed by variable name, e.g.
// {"HOOKLEDGER_MAX_ATTEMPTS":"8"} (template.yaml's PipelineSettings); only
// the variables SettingNames lists.
const SettingsVar = "HOOKLEDGER_SETTINGS"

// settingNames are the variables SettingsVar may set: settings with a
// default in code that a deployment may change. The template sets the
// others itself or from a parameter of their own (setByParameter).
var settingNames = []string{
	"LOG_LEVEL", "HOOKLEDGER_MAX_BODY", "HOOKLEDGER_MISMATCH", "HOOKLEDGER_PAYLOAD", "HOOKLEDGER_PAYLOAD_STORE_ABOVE",
	"HOOKLEDGER_MAX_ATTEMPTS", "HOOKLEDGER_UNROUTED",
	"HOOKLEDGER_SHARDS", "HOOKLEDGER_RECLAIM_AFTER", "HOOKLEDGER_RECLAIM_BATCH", "HOOKLEDGER_RECLAIM_MAX_QUEUE", "HOOKLEDGER_RECLAIM_CHAIN",
}

// setByParameter names the template parameter that sets a variable SettingsVar refuses.
var setByParameter = map[string]string{
	"HOOKLEDGER_RETENTION":          "RetentionDays",
	"HOOKLEDGER_PAYLOAD_STORE_DAYS": "LargeBodyStoreDays",
	"HOOKLEDGER_PAYLOAD_BUCKET":     "LargeBodyStoreDays",
	"HOOKLEDGER_SOURCES":            "SourcesConfig",
	"HOOKLEDGER_SECRET_GRANTS":      "SecretsPrefix",
	"HOOKLEDGER_EFFECT_SETTINGS":    "EffectSettings",
	"HOOKLEDGER_RECONCILE":          "ReconcileConfig",
	"HOOKLEDGER_FORWARD_BUS":        "ForwardEventBus",
	"HOOKLEDGER_SPANS":              "Tracing",
}

// SettingNames returns the variables HOOKLEDGER_SETTINGS may set.
func SettingNames() []string { return slices.Clone(settingNames) }

// withSettings returns getenv with HOOKLEDGER_SETTINGS's members laid over
// it. The template never sets those variables itself, so on AWS nothing is
// replaced; an emulator's environment (MiniStack's LOG_LEVEL) or a shell
// cannot override the deployment. An unknown member is an error.
func withSettings(getenv func(string) string) (func(string) string, error) {
	raw := strings.TrimSpace(getenv(SettingsVar))
	if raw == "" {
		return getenv, nil
	}
	const want = `want one JSON object of strings keyed by variable name, e.g. {"HOOKLEDGER_MAX_ATTEMPTS":"8","LOG_LEVEL":"warn"}`
	if err := jsoncheck.Strict([]byte(raw)); err != nil {
		return nil, fmt.Errorf("%s (template parameter PipelineSettings): %w (%s)", SettingsVar, err, want)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &doc); err != nil || doc == nil {
		return nil, fmt.Errorf("%s (template parameter PipelineSettings): not a JSON object (%s)", SettingsVar, want)
	}
	values := make(map[string]string, len(doc))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(doc)) {
		if !slices.Contains(settingNames, name) {
			hint := ""
			if p, ok := setByParameter[name]; ok {
				hint = fmt.Sprintf(" (%s comes from the template parameter %s)", name, p)
			}
			errs = append(errs, fmt.Errorf("%s (template parameter PipelineSettings): unknown setting %q%s; it takes %s",
				SettingsVar, name, hint, strings.Join(settingNames, ", ")))
			continue
		}
		var v string
		if err := json.Unmarshal(doc[name], &v); err != nil {
			var n json.Number
			if err := json.Unmarshal(doc[name], &n); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s is %s: want a string (or a number)", SettingsVar, name, doc[name]))
				continue
			}
			v = n.String()
		}
		values[name] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return func(name string) string {
		if v, ok := values[name]; ok {
			return v
		}
		return getenv(name)
	}, nil
}

// maxRetentionDays keeps days times 24h inside a Duration.
const maxRetentionDays = 106751

// parseRetention reads HOOKLEDGER_RETENTION: whole days ("7d", what the
// template's RetentionDays gives) or a Go duration ("168h").
func parseRetention(v string) (time.Duration, bool) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > maxRetentionDays {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(v)
	return d, err == nil && d > 0
}

// Load reads the configuration through getenv, with HOOKLEDGER_SETTINGS laid
// over it, and applies this package's defaults. Validate with the method
// that fits the function.
func Load(getenv func(string) string) (Config, error) {
	getenv, err := withSettings(getenv)
	if err != nil {
		return Config{}, err
	}
	c := Config{
		Table: DefaultTable, Retention: ledger.DefaultRetention, Shards: ledger.DefaultShards, ReclaimAfter: ledger.DefaultReclaimAfter,
		LogLevel: DefaultLogLevel, Payload: DefaultPayload, PayloadPrefix: DefaultPayloadPrefix,
		Stage: DefaultStage, EmitMetrics: getenv("AWS_LAMBDA_FUNCTION_NAME") != "",
	}
	v := &vars{getenv: getenv}
	switch m := strings.ToLower(strings.TrimSpace(getenv("HOOKLEDGER_METRICS"))); m {
	case "1", "true", "yes", "on":
		c.EmitMetrics = true
	case "", "0", "false", "no", "off":
	default:
		v.fail(fmt.Errorf("HOOKLEDGER_METRICS=%q: want 1/true (write metric lines) or 0/false", m))
	}
	v.str("HOOKLEDGER_TABLE", &c.Table)
	v.str("HOOKLEDGER_QUEUE_URL", &c.QueueURL)
	v.str("HOOKLEDGER_DLQ_URL", &c.DLQURL)
	v.str("HOOKLEDGER_BUS_DLQ_URL", &c.BusDLQURL)
	v.str("HOOKLEDGER_FORWARD_BUS", &c.ForwardBus)
	v.str("HOOKLEDGER_SOURCES", &c.SourcesJSON)
	v.str("HOOKLEDGER_SECRET_GRANTS", &c.SecretGrants)
	v.sourcesFile(&c.SourcesJSON)
	v.num("HOOKLEDGER_MAX_BODY", &c.MaxBody)
	v.retention(&c.Retention)
	v.num("HOOKLEDGER_SHARDS", &c.Shards)
	v.dur("HOOKLEDGER_RECLAIM_AFTER", &c.ReclaimAfter)
	v.str("HOOKLEDGER_MISMATCH", &c.Mismatch)
	v.num("HOOKLEDGER_MAX_ATTEMPTS", &c.MaxAttempts)
	if getenv("HOOKLEDGER_MAX_RECLAIMS") != "" {
		v.fail(errors.New("HOOKLEDGER_MAX_RECLAIMS is gone: crashes, timeouts and AWS errors no longer count toward a limit, " +
			"the reclaimer gives up on an event a day before its record expires instead (HOOKLEDGER_MAX_ATTEMPTS still bounds the handler's own failures); unset it"))
	}
	v.num("HOOKLEDGER_RECLAIM_BATCH", &c.ReclaimBatch)
	v.switchable("HOOKLEDGER_RECLAIM_MAX_QUEUE", &c.ReclaimMaxQueue)
	v.switchable("HOOKLEDGER_RECLAIM_CHAIN", &c.ReclaimChain)
	v.str("AWS_LAMBDA_FUNCTION_NAME", &c.FunctionName)
	v.dur("HOOKLEDGER_LEASE", &c.Lease)
	v.str("HOOKLEDGER_UNROUTED", &c.Unrouted)
	v.str("HOOKLEDGER_PAYLOAD", &c.Payload)
	v.str("HOOKLEDGER_PAYLOAD_BUCKET", &c.PayloadBucket)
	v.str("HOOKLEDGER_PAYLOAD_PREFIX", &c.PayloadPrefix)
	v.whole("HOOKLEDGER_PAYLOAD_STORE_ABOVE", "stores only the bodies a ledger item cannot hold", &c.PayloadStoreAbove)
	v.num("HOOKLEDGER_PAYLOAD_STORE_DAYS", &c.PayloadStoreDays)
	v.str("LOG_LEVEL", &c.LogLevel)
	v.str("HOOKLEDGER_STAGE", &c.Stage)
	v.str("HOOKLEDGER_SPANS", &c.Spans)
	return c, errors.Join(v.errs...)
}

// vars reads typed variables, gathering errors; an unset variable leaves its field alone.
type vars struct {
	getenv func(string) string
	errs   []error
}

func (v *vars) fail(err error) { v.errs = append(v.errs, err) }

// str reads a string; one of only spaces is an error.
func (v *vars) str(name string, dst *string) {
	raw := v.getenv(name)
	switch s := strings.TrimSpace(raw); {
	case s != "":
		*dst = s
	case raw != "":
		v.fail(fmt.Errorf("%s is blank (only spaces): set a value or unset it", name))
	}
}

// num reads a positive integer.
func (v *vars) num(name string, dst *int) {
	if s := strings.TrimSpace(v.getenv(name)); s != "" {
		i, err := strconv.Atoi(s)
		if err != nil || i <= 0 {
			v.fail(fmt.Errorf("%s=%q: want a positive integer", name, s))
			return
		}
		*dst = i
	}
}

// whole reads an integer, 0 or more; zero says what 0 does.
func (v *vars) whole(name, zero string, dst *int) {
	if s := strings.TrimSpace(v.getenv(name)); s != "" {
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 {
			v.fail(fmt.Errorf("%s=%q: want a whole number, 0 or more (0 %s)", name, s, zero))
			return
		}
		*dst = i
	}
}

// switchable is whole for a count whose 0 turns its feature off (Off).
func (v *vars) switchable(name string, dst *int) {
	v.whole(name, "turns it off", dst)
	if *dst == 0 && strings.TrimSpace(v.getenv(name)) != "" {
		*dst = Off
	}
}

// dur reads a positive Go duration.
func (v *vars) dur(name string, dst *time.Duration) {
	if s := strings.TrimSpace(v.getenv(name)); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			v.fail(fmt.Errorf("%s=%q: want a positive Go duration such as 90s, 5m or 168h", name, s))
			return
		}
		*dst = d
	}
}

// retention reads HOOKLEDGER_RETENTION (parseRetention).
func (v *vars) retention(dst *time.Duration) {
	if s := strings.TrimSpace(v.getenv("HOOKLEDGER_RETENTION")); s != "" {
		if d, ok := parseRetention(s); ok {
			*dst = d
		} else {
			v.fail(fmt.Errorf("HOOKLEDGER_RETENTION=%q: want whole days such as 7d (template parameter RetentionDays) or a Go duration such as 168h", s))
		}
	}
}

// sourcesFile reads HOOKLEDGER_SOURCES_FILE, which must not come with HOOKLEDGER_SOURCES.
func (v *vars) sourcesFile(dst *string) {
	f := v.getenv("HOOKLEDGER_SOURCES_FILE")
	switch {
	case f != "" && *dst != "":
		v.fail(errors.New("HOOKLEDGER_SOURCES and HOOKLEDGER_SOURCES_FILE are both set: keep one (the file would be ignored)"))
	case f != "":
		b, err := os.ReadFile(f)
		if err != nil {
			v.fail(fmt.Errorf("HOOKLEDGER_SOURCES_FILE: %w", err))
		}
		*dst = string(b)
	}
}

func (c Config) validateCommon() []error {
	var errs []error
	if c.Table == "" {
		errs = append(errs, errors.New("HOOKLEDGER_TABLE is empty"))
	}
	if c.Shards > 1000 {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_SHARDS=%d: at most 1000", c.Shards))
	}
	if c.Retention < ledger.MinRetention {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_RETENTION=%v: keep at least %.0fh, longer than your senders retry (Stripe: 3 days)", c.Retention, ledger.MinRetention.Hours()))
	}
	if c.Payload != PayloadAlways && c.Payload != PayloadOnTrouble {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_PAYLOAD=%q: want always (store every body as it arrives) or on-trouble (only when an event may need it again)", c.Payload))
	}
	if c.PayloadBucket != "" && !strings.HasSuffix(c.PayloadPrefix, "/") {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_PAYLOAD_PREFIX=%q: end it with / (the roles are granted the objects under it)", c.PayloadPrefix))
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", c.LogLevel))
	}
	if err := trace.CheckSpans(c.Spans); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// ValidateReceiver checks what the receiver needs.
func (c Config) ValidateReceiver() error {
	errs := c.validateCommon()
	if c.QueueURL == "" {
		errs = append(errs, errors.New("HOOKLEDGER_QUEUE_URL is empty: set it to the processing queue's URL"))
	}
	if c.SourcesJSON == "" {
		errs = append(errs, errors.New("HOOKLEDGER_SOURCES is empty: set it (or HOOKLEDGER_SOURCES_FILE) to the sources JSON; see README, Configuration"))
	}
	if c.Mismatch != "" && c.Mismatch != "flag" && c.Mismatch != "reject" {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_MISMATCH=%q: want flag or reject", c.Mismatch))
	}
	switch {
	case c.MaxBody > MaxBodyLimit && c.PayloadBucket == "":
		errs = append(errs, fmt.Errorf("HOOKLEDGER_MAX_BODY=%d: at most %d (1 MiB) without a payload store: the ledger stores a payload in one DynamoDB item of 400 KB after compression, "+
			"so larger bodies could be accepted only to fail; lower it (PipelineSettings) or turn on the S3 payload store (template parameter LargeBodyStoreDays)", c.MaxBody, MaxBodyLimit))
	case c.MaxBody > MaxBodyWithStore:
		errs = append(errs, fmt.Errorf("HOOKLEDGER_MAX_BODY=%d: at most %d (6 MiB), the most a Lambda function can receive; lower it (PipelineSettings)", c.MaxBody, MaxBodyWithStore))
	}
	// Compared in days: days times 24h overflows a Duration past 106,751.
	if need := int((c.Retention + 24*time.Hour - 1) / (24 * time.Hour)); c.PayloadBucket != "" && c.PayloadStoreDays > 0 && c.PayloadStoreDays < need {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_PAYLOAD_STORE_DAYS=%d: the payload store would delete bodies before the ledger forgets their records (HOOKLEDGER_RETENTION=%v); "+
			"raise LargeBodyStoreDays to at least %d", c.PayloadStoreDays, c.Retention, need))
	}
	if c.PayloadStoreAbove > 0 && c.PayloadBucket == "" {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_PAYLOAD_STORE_ABOVE=%d does nothing without the payload store: turn the store on (template parameter LargeBodyStoreDays) or remove it from PipelineSettings", c.PayloadStoreAbove))
	}
	return errors.Join(errs...)
}

// ValidateBus checks what the bus door needs.
func (c Config) ValidateBus() error {
	errs := c.validateCommon()
	if c.QueueURL == "" {
		errs = append(errs, errors.New("HOOKLEDGER_QUEUE_URL is empty: set it to the processing queue's URL"))
	}
	if c.BusDLQURL == "" {
		errs = append(errs, errors.New("HOOKLEDGER_BUS_DLQ_URL is empty: set it to the bus door's dead-letter queue, where it parks the events it cannot take"))
	}
	if c.BusDLQURL != "" && c.BusDLQURL == c.QueueURL {
		errs = append(errs, errors.New("HOOKLEDGER_BUS_DLQ_URL is the processing queue's URL: parked events would be taken for ledger events"))
	}
	if c.SourcesJSON == "" {
		errs = append(errs, errors.New("HOOKLEDGER_SOURCES is empty: set it (or HOOKLEDGER_SOURCES_FILE) to the sources JSON"))
	}
	if c.Mismatch != "" && c.Mismatch != "flag" && c.Mismatch != "reject" {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_MISMATCH=%q: want flag or reject", c.Mismatch))
	}
	return errors.Join(errs...)
}

// ValidateProcessor checks what the processor needs.
func (c Config) ValidateProcessor() error {
	errs := c.validateCommon()
	if c.Unrouted != "" && c.Unrouted != "done" && c.Unrouted != "fail" {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_UNROUTED=%q: want done (mark unrouted events done, counted as Unrouted) or fail (mark them dead, alarmed)", c.Unrouted))
	}
	return errors.Join(errs...)
}

// ValidateReclaimer checks what the reclaimer needs.
func (c Config) ValidateReclaimer() error {
	errs := c.validateCommon()
	if c.QueueURL == "" {
		errs = append(errs, errors.New("HOOKLEDGER_QUEUE_URL is empty: set it to the processing queue's URL"))
	}
	if c.DLQURL != "" && c.DLQURL == c.QueueURL {
		errs = append(errs, errors.New("HOOKLEDGER_DLQ_URL is the processing queue's URL: set it to the dead-letter queue's (reading the processing queue would take messages from the processor), or leave it unset"))
	}
	if c.ReclaimBatch > 1000 {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_RECLAIM_BATCH=%d: at most 1000 records per shard query", c.ReclaimBatch))
	}
	if c.ReclaimChain > 15 {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_RECLAIM_CHAIN=%d: at most 15 continuations per scheduled run (Lambda's recursive loop detection stops longer chains; the schedule starts a new chain every tick anyway)", c.ReclaimChain))
	}
	return errors.Join(errs...)
}

// LedgerOptions are the ledger's options from c.
func (c Config) LedgerOptions() ledger.Options {
	return ledger.Options{Table: c.Table, Shards: c.Shards, Retention: c.Retention, ReclaimAfter: c.ReclaimAfter}
}
