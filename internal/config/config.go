// Package config holds hookledger's core settings: read from the
// environment once, in a function's main, with defaults and validation. It
// builds nothing and knows no effect: each handler package turns it into a
// handler (FromConfig), and effects read their own settings.
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

	"github.com/hookledger/hookledger/jsoncheck"
	"github.com/hookledger/hookledger/ledger"
)

// MaxBodyLimit is the largest HOOKLEDGER_MAX_BODY: a payload is stored in
// one DynamoDB item (400 KB) after gzip, and JSON rarely compresses better
// than 3-4x. Up to about 390 KiB every body can be stored; above that only
// bodies that compress enough, and the receiver answers 413 to the rest
// before writing anything.
const MaxBodyLimit = 1 << 20

// MaxBodyWithStore is the largest HOOKLEDGER_MAX_BODY with the S3 payload
// store: what a Lambda function can receive (a 6 MB request, which the
// HTTP API or function URL event wraps in JSON, base64 for binary bodies,
// so the bodies that arrive on AWS are somewhat smaller).
const MaxBodyWithStore = 6 << 20

// Payload policies (HOOKLEDGER_PAYLOAD): when a new event's body is stored
// in the ledger's payload item.
const (
	// PayloadAlways stores every body as the event is received, in parallel
	// with the enqueue: every event, done ones included, keeps its body for
	// inspection and replay until it expires.
	PayloadAlways = "always"
	// PayloadOnTrouble stores a body only when the event may need it again:
	// the enqueue failed, a duplicate found the record still received, the
	// message was redelivered, the handler failed, or the event went dead.
	// Events done on their first delivery keep no body.
	PayloadOnTrouble = "on-trouble"
)

// DefaultPayloadPrefix is the key prefix of the S3 payload store.
const DefaultPayloadPrefix = "payloads/"

// Defaults of the settings this package uses itself. Every other setting
// left unset stays zero here and takes the default of the code that uses
// it (receiver.DefaultMaxBody, processor.DefaultMaxAttempts,
// reclaimer.DefaultPerShard, ...), so each default is written once.
const (
	DefaultTable    = "hookledger" // HOOKLEDGER_TABLE, outside the template (hookledger dev)
	DefaultLogLevel = "info"
	DefaultStage    = "local"
	DefaultPayload  = PayloadOnTrouble // a receiver's whose Payload is "" too
)

// Off is what a count whose 0 turns its feature off (HOOKLEDGER_RECLAIM_MAX_QUEUE,
// HOOKLEDGER_RECLAIM_CHAIN) holds when it is set to 0, as the handlers'
// negative values mean off; a zero field means unset (the handler's
// default).
const Off = -1

// Config is every setting, with its environment variable. A zero field is
// an unset variable: the default of the code that uses it.
type Config struct {
	Table        string        // HOOKLEDGER_TABLE (default DefaultTable)
	QueueURL     string        // HOOKLEDGER_QUEUE_URL (receiver, reclaimer)
	DLQURL       string        // HOOKLEDGER_DLQ_URL (reclaimer; unset: it does not read the dead-letter queue, and hookledger dev takes the queue's redrive target)
	BusDLQURL    string        // HOOKLEDGER_BUS_DLQ_URL: the bus door's dead-letter queue, where it parks the events it cannot take (bus)
	ForwardBus   string        // HOOKLEDGER_FORWARD_BUS: the EventBridge bus Event.Forward publishes to (processor; unset: Forward fails, saying so)
	SourcesJSON  string        // HOOKLEDGER_SOURCES (JSON, or an ssm:/secretsmanager: reference to it), or the file HOOKLEDGER_SOURCES_FILE (receiver)
	SecretGrants string        // HOOKLEDGER_SECRET_GRANTS: what the deployed role may read (template.yaml sets it; unset: not checked)
	MaxBody      int           // HOOKLEDGER_MAX_BODY bytes (0: receiver.DefaultMaxBody)
	Retention    time.Duration // HOOKLEDGER_RETENTION, days ("7d") or a Go duration (default ledger.DefaultRetention)
	Shards       int           // HOOKLEDGER_SHARDS (default ledger.DefaultShards)
	ReclaimAfter time.Duration // HOOKLEDGER_RECLAIM_AFTER (default ledger.DefaultReclaimAfter)
	Mismatch     string        // HOOKLEDGER_MISMATCH: flag ("": the receiver's default, flag) or reject
	MaxAttempts  int           // HOOKLEDGER_MAX_ATTEMPTS: how many times the handler may fail an event before it is dead (0: processor.DefaultMaxAttempts)
	ReclaimBatch int           // HOOKLEDGER_RECLAIM_BATCH due records read per shard query (0: reclaimer.DefaultPerShard)
	// ReclaimMaxQueue: HOOKLEDGER_RECLAIM_MAX_QUEUE, the queue depth at
	// which the reclaimer pauses re-driving (0: reclaimer.DefaultMaxQueue;
	// Off, from HOOKLEDGER_RECLAIM_MAX_QUEUE=0: never pause).
	ReclaimMaxQueue int
	// ReclaimChain: HOOKLEDGER_RECLAIM_CHAIN, how many continuations a
	// scheduled reclaimer run may start while a backlog remains (0:
	// reclaimer.DefaultMaxChain; Off, from HOOKLEDGER_RECLAIM_CHAIN=0: none,
	// the schedule alone drives the reclaimer).
	ReclaimChain int
	// FunctionName: AWS_LAMBDA_FUNCTION_NAME, set by Lambda; the reclaimer
	// invokes itself by it to continue.
	FunctionName string
	Lease        time.Duration // HOOKLEDGER_LEASE, used outside Lambda (0: processor.DefaultLease)
	Unrouted     string        // HOOKLEDGER_UNROUTED: done ("": the processor's default, done) or fail, for events no route matches
	Payload      string        // HOOKLEDGER_PAYLOAD: on-trouble (DefaultPayload) or always (receiver)
	// PayloadBucket is the S3 payload store's bucket (HOOKLEDGER_PAYLOAD_BUCKET;
	// empty: no store, and bodies a ledger item cannot hold get 413).
	PayloadBucket string
	PayloadPrefix string // HOOKLEDGER_PAYLOAD_PREFIX, the store's key prefix (default DefaultPayloadPrefix)
	// PayloadStoreAbove (HOOKLEDGER_PAYLOAD_STORE_ABOVE, bytes): bodies whose
	// stored (compressed) size exceeds it go to the store even when a ledger
	// item could hold them; 0 (default): only those it cannot.
	PayloadStoreAbove int
	// PayloadStoreDays is how long the bucket keeps objects
	// (HOOKLEDGER_PAYLOAD_STORE_DAYS, the template's lifecycle rule); the
	// receiver refuses a store that forgets bodies before the ledger
	// forgets their records. 0: not checked.
	PayloadStoreDays int
	LogLevel         string // LOG_LEVEL: debug, info (DefaultLogLevel), warn, error
	Stage            string // HOOKLEDGER_STAGE, the metrics' Stage dimension (default DefaultStage)
	// EmitMetrics: write CloudWatch EMF lines; on in Lambda
	// (AWS_LAMBDA_FUNCTION_NAME set) or with HOOKLEDGER_METRICS=1.
	EmitMetrics bool
}

// SettingsVar holds the pipeline's settings as one JSON object keyed by
// their variable names, e.g. {"HOOKLEDGER_MAX_ATTEMPTS":"8","LOG_LEVEL":"warn"}
// (template.yaml sets it from the PipelineSettings parameter). Only the
// variables SettingNames lists may be set there.
const SettingsVar = "HOOKLEDGER_SETTINGS"

// settingNames are the variables SettingsVar may set: the pipeline's
// settings that have a default in code and that a deployment may change.
// The template sets the others itself (names of resources, grants) or from
// a parameter of their own (setByParameter).
var settingNames = []string{
	"LOG_LEVEL",
	"HOOKLEDGER_MAX_BODY",
	"HOOKLEDGER_MISMATCH",
	"HOOKLEDGER_PAYLOAD",
	"HOOKLEDGER_PAYLOAD_STORE_ABOVE",
	"HOOKLEDGER_MAX_ATTEMPTS",
	"HOOKLEDGER_UNROUTED",
	"HOOKLEDGER_SHARDS",
	"HOOKLEDGER_RECLAIM_AFTER",
	"HOOKLEDGER_RECLAIM_BATCH",
	"HOOKLEDGER_RECLAIM_MAX_QUEUE",
	"HOOKLEDGER_RECLAIM_CHAIN",
}

// setByParameter names the template parameter that sets a variable, for
// the message that refuses it in SettingsVar.
var setByParameter = map[string]string{
	"HOOKLEDGER_RETENTION":          "RetentionDays",
	"HOOKLEDGER_PAYLOAD_STORE_DAYS": "LargeBodyStoreDays",
	"HOOKLEDGER_PAYLOAD_BUCKET":     "LargeBodyStoreDays",
	"HOOKLEDGER_SOURCES":            "SourcesConfig",
	"HOOKLEDGER_SECRET_GRANTS":      "SecretsPrefix",
	"HOOKLEDGER_EFFECT_SETTINGS":    "EffectSettings",
	"HOOKLEDGER_RECONCILE":          "ReconcileConfig",
	"HOOKLEDGER_FORWARD_BUS":        "ForwardEventBus",
}

// SettingNames returns the variables HOOKLEDGER_SETTINGS may set.
func SettingNames() []string { return slices.Clone(settingNames) }

// withSettings returns getenv with the members of HOOKLEDGER_SETTINGS laid
// over it: a member replaces a variable of the same name the function
// inherited. The template never sets those variables itself, so on AWS
// nothing is replaced; an emulator that hands its own environment to the
// functions it runs (MiniStack's LOG_LEVEL) or a shell running hookledger
// dev cannot override what the deployment says. A member it does not know
// is an error.
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

// Load reads the configuration through getenv (os.Getenv in main), with
// HOOKLEDGER_SETTINGS laid over it, and applies the defaults this package
// owns. It does not validate; call the Validate method that fits the
// function.
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
	var errs []error
	str := func(name string, dst *string) {
		raw := getenv(name)
		v := strings.TrimSpace(raw)
		switch {
		case v != "":
			*dst = v
		case raw != "":
			errs = append(errs, fmt.Errorf("%s is blank (only spaces): set a value or unset it", name))
		}
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("HOOKLEDGER_METRICS"))); v {
	case "1", "true", "yes", "on":
		c.EmitMetrics = true
	case "", "0", "false", "no", "off":
	default:
		errs = append(errs, fmt.Errorf("HOOKLEDGER_METRICS=%q: want 1/true (write metric lines) or 0/false", v))
	}
	num := func(name string, dst *int) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
				return
			}
			*dst = i
		}
	}
	whole := func(name, zero string, dst *int) { // like num, but 0 is allowed
		if v := strings.TrimSpace(getenv(name)); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a whole number, 0 or more (0 %s)", name, v, zero))
				return
			}
			*dst = i
		}
	}
	switchable := func(name string, dst *int) { // 0 turns the feature off
		whole(name, "turns it off", dst)
		if *dst == 0 && strings.TrimSpace(getenv(name)) != "" {
			*dst = Off
		}
	}
	dur := func(name string, dst *time.Duration) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive Go duration such as 90s, 5m or 168h", name, v))
				return
			}
			*dst = d
		}
	}
	str("HOOKLEDGER_TABLE", &c.Table)
	str("HOOKLEDGER_QUEUE_URL", &c.QueueURL)
	str("HOOKLEDGER_DLQ_URL", &c.DLQURL)
	str("HOOKLEDGER_BUS_DLQ_URL", &c.BusDLQURL)
	str("HOOKLEDGER_FORWARD_BUS", &c.ForwardBus)
	str("HOOKLEDGER_SOURCES", &c.SourcesJSON)
	str("HOOKLEDGER_SECRET_GRANTS", &c.SecretGrants)
	if f := getenv("HOOKLEDGER_SOURCES_FILE"); f != "" && c.SourcesJSON != "" {
		errs = append(errs, errors.New("HOOKLEDGER_SOURCES and HOOKLEDGER_SOURCES_FILE are both set: keep one (the file would be ignored)"))
	} else if f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("HOOKLEDGER_SOURCES_FILE: %w", err))
		}
		c.SourcesJSON = string(b)
	}
	num("HOOKLEDGER_MAX_BODY", &c.MaxBody)
	if v := strings.TrimSpace(getenv("HOOKLEDGER_RETENTION")); v != "" {
		if d, ok := parseRetention(v); ok {
			c.Retention = d
		} else {
			errs = append(errs, fmt.Errorf("HOOKLEDGER_RETENTION=%q: want whole days such as 7d (template parameter RetentionDays) or a Go duration such as 168h", v))
		}
	}
	num("HOOKLEDGER_SHARDS", &c.Shards)
	dur("HOOKLEDGER_RECLAIM_AFTER", &c.ReclaimAfter)
	str("HOOKLEDGER_MISMATCH", &c.Mismatch)
	num("HOOKLEDGER_MAX_ATTEMPTS", &c.MaxAttempts)
	if getenv("HOOKLEDGER_MAX_RECLAIMS") != "" {
		errs = append(errs, errors.New("HOOKLEDGER_MAX_RECLAIMS is gone: crashes, timeouts and AWS errors no longer count toward a limit, "+
			"the reclaimer gives up on an event a day before its record expires instead (HOOKLEDGER_MAX_ATTEMPTS still bounds the handler's own failures); unset it"))
	}
	num("HOOKLEDGER_RECLAIM_BATCH", &c.ReclaimBatch)
	switchable("HOOKLEDGER_RECLAIM_MAX_QUEUE", &c.ReclaimMaxQueue)
	switchable("HOOKLEDGER_RECLAIM_CHAIN", &c.ReclaimChain)
	str("AWS_LAMBDA_FUNCTION_NAME", &c.FunctionName)
	dur("HOOKLEDGER_LEASE", &c.Lease)
	str("HOOKLEDGER_UNROUTED", &c.Unrouted)
	str("HOOKLEDGER_PAYLOAD", &c.Payload)
	str("HOOKLEDGER_PAYLOAD_BUCKET", &c.PayloadBucket)
	str("HOOKLEDGER_PAYLOAD_PREFIX", &c.PayloadPrefix)
	whole("HOOKLEDGER_PAYLOAD_STORE_ABOVE", "stores only the bodies a ledger item cannot hold", &c.PayloadStoreAbove)
	num("HOOKLEDGER_PAYLOAD_STORE_DAYS", &c.PayloadStoreDays)
	str("LOG_LEVEL", &c.LogLevel)
	str("HOOKLEDGER_STAGE", &c.Stage)
	return c, errors.Join(errs...)
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
