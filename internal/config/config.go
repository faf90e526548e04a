// Package config holds hookledger's core settings: read from the
// environment once, in a function's main, with defaults and validation. It
// builds nothing and knows no effect: each handler package turns it into a
// handler (FromConfig), and effects read their own settings.
package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

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

// Config is every setting, with its environment variable.
type Config struct {
	Table        string        // HOOKLEDGER_TABLE (default "hookledger")
	QueueURL     string        // HOOKLEDGER_QUEUE_URL (receiver, reclaimer)
	DLQURL       string        // HOOKLEDGER_DLQ_URL (reclaimer; unset: it does not read the dead-letter queue, and hookledger dev takes the queue's redrive target)
	SourcesJSON  string        // HOOKLEDGER_SOURCES (JSON, or an ssm:/secretsmanager: reference to it), or the file HOOKLEDGER_SOURCES_FILE (receiver)
	SecretGrants string        // HOOKLEDGER_SECRET_GRANTS: what the deployed role may read (template.yaml sets it; unset: not checked)
	MaxBody      int           // HOOKLEDGER_MAX_BODY bytes (default 262144)
	Retention    time.Duration // HOOKLEDGER_RETENTION (default 168h)
	Shards       int           // HOOKLEDGER_SHARDS (default 16)
	ReclaimAfter time.Duration // HOOKLEDGER_RECLAIM_AFTER (default 2m)
	Mismatch     string        // HOOKLEDGER_MISMATCH: flag (default) or reject
	MaxAttempts  int           // HOOKLEDGER_MAX_ATTEMPTS: how many times the handler may fail an event before it is dead (default 5)
	ReclaimBatch int           // HOOKLEDGER_RECLAIM_BATCH due records read per shard query (default 25)
	// ReclaimMaxQueue: HOOKLEDGER_RECLAIM_MAX_QUEUE, the queue depth at
	// which the reclaimer pauses re-driving (default 1000; 0: never pause).
	ReclaimMaxQueue int
	// ReclaimChain: HOOKLEDGER_RECLAIM_CHAIN, how many continuations a
	// scheduled reclaimer run may start while a backlog remains (default
	// 10; 0: none, the schedule alone drives the reclaimer).
	ReclaimChain int
	// FunctionName: AWS_LAMBDA_FUNCTION_NAME, set by Lambda; the reclaimer
	// invokes itself by it to continue.
	FunctionName string
	Lease        time.Duration // HOOKLEDGER_LEASE, used outside Lambda (default 60s)
	Unrouted     string        // HOOKLEDGER_UNROUTED: done (default) or fail, for events no route matches
	Payload      string        // HOOKLEDGER_PAYLOAD: on-trouble (default) or always (receiver, processor)
	// PayloadBucket is the S3 payload store's bucket (HOOKLEDGER_PAYLOAD_BUCKET;
	// empty: no store, and bodies a ledger item cannot hold get 413).
	PayloadBucket string
	PayloadPrefix string // HOOKLEDGER_PAYLOAD_PREFIX, the store's key prefix (default "payloads/")
	// PayloadStoreAbove (HOOKLEDGER_PAYLOAD_STORE_ABOVE, bytes): bodies whose
	// stored (compressed) size exceeds it go to the store even when a ledger
	// item could hold them; 0 (default): only those it cannot.
	PayloadStoreAbove int
	// PayloadStoreDays is how long the bucket keeps objects
	// (HOOKLEDGER_PAYLOAD_STORE_DAYS, the template's lifecycle rule); the
	// receiver refuses a store that forgets bodies before the ledger
	// forgets their records. 0: not checked.
	PayloadStoreDays int
	LogLevel         string // LOG_LEVEL: debug, info (default), warn, error
	Stage            string // HOOKLEDGER_STAGE, the metrics' Stage dimension (default "local")
	// EmitMetrics: write CloudWatch EMF lines; on in Lambda
	// (AWS_LAMBDA_FUNCTION_NAME set) or with HOOKLEDGER_METRICS=1.
	EmitMetrics bool
}

// Load reads the configuration through getenv (os.Getenv in main) and
// applies defaults. It does not validate; call the Validate method that
// fits the function.
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		Table: "hookledger", MaxBody: 256 * 1024, Retention: ledger.DefaultRetention,
		Shards: ledger.DefaultShards, ReclaimAfter: ledger.DefaultReclaimAfter, Mismatch: "flag",
		MaxAttempts: 5, ReclaimBatch: 25, ReclaimMaxQueue: 1000, ReclaimChain: 10, Lease: 60 * time.Second, Unrouted: "done", LogLevel: "info",
		Payload: PayloadOnTrouble, PayloadPrefix: DefaultPayloadPrefix,
		Stage: "local", EmitMetrics: getenv("AWS_LAMBDA_FUNCTION_NAME") != "",
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
	count := func(name string, dst *int) { // like num, but 0 is allowed (it turns the feature off)
		if v := strings.TrimSpace(getenv(name)); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a whole number, 0 or more (0 turns it off)", name, v))
				return
			}
			*dst = i
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
	dur("HOOKLEDGER_RETENTION", &c.Retention)
	num("HOOKLEDGER_SHARDS", &c.Shards)
	dur("HOOKLEDGER_RECLAIM_AFTER", &c.ReclaimAfter)
	str("HOOKLEDGER_MISMATCH", &c.Mismatch)
	num("HOOKLEDGER_MAX_ATTEMPTS", &c.MaxAttempts)
	if getenv("HOOKLEDGER_MAX_RECLAIMS") != "" {
		errs = append(errs, errors.New("HOOKLEDGER_MAX_RECLAIMS is gone: crashes, timeouts and AWS errors no longer count toward a limit, "+
			"the reclaimer gives up on an event a day before its record expires instead (HOOKLEDGER_MAX_ATTEMPTS still bounds the handler's own failures); unset it"))
	}
	num("HOOKLEDGER_RECLAIM_BATCH", &c.ReclaimBatch)
	count("HOOKLEDGER_RECLAIM_MAX_QUEUE", &c.ReclaimMaxQueue)
	count("HOOKLEDGER_RECLAIM_CHAIN", &c.ReclaimChain)
	str("AWS_LAMBDA_FUNCTION_NAME", &c.FunctionName)
	dur("HOOKLEDGER_LEASE", &c.Lease)
	str("HOOKLEDGER_UNROUTED", &c.Unrouted)
	str("HOOKLEDGER_PAYLOAD", &c.Payload)
	str("HOOKLEDGER_PAYLOAD_BUCKET", &c.PayloadBucket)
	str("HOOKLEDGER_PAYLOAD_PREFIX", &c.PayloadPrefix)
	count("HOOKLEDGER_PAYLOAD_STORE_ABOVE", &c.PayloadStoreAbove)
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
	if c.Mismatch != "flag" && c.Mismatch != "reject" {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_MISMATCH=%q: want flag or reject", c.Mismatch))
	}
	switch {
	case c.MaxBody > MaxBodyLimit && c.PayloadBucket == "":
		errs = append(errs, fmt.Errorf("HOOKLEDGER_MAX_BODY=%d: at most %d (1 MiB) without a payload store: the ledger stores a payload in one DynamoDB item of 400 KB after compression, "+
			"so larger bodies could be accepted only to fail; lower it (template parameter MaxBodyBytes) or turn on the S3 payload store (PayloadStore=s3)", c.MaxBody, MaxBodyLimit))
	case c.MaxBody > MaxBodyWithStore:
		errs = append(errs, fmt.Errorf("HOOKLEDGER_MAX_BODY=%d: at most %d (6 MiB), the most a Lambda function can receive; lower it (template parameter MaxBodyBytes)", c.MaxBody, MaxBodyWithStore))
	}
	// Compared in days: days times 24h overflows a Duration past 106,751.
	if need := int((c.Retention + 24*time.Hour - 1) / (24 * time.Hour)); c.PayloadBucket != "" && c.PayloadStoreDays > 0 && c.PayloadStoreDays < need {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_PAYLOAD_STORE_DAYS=%d: the payload store would delete bodies before the ledger forgets their records (HOOKLEDGER_RETENTION=%v); "+
			"raise PayloadStoreDays to at least %d", c.PayloadStoreDays, c.Retention, need))
	}
	if c.PayloadStoreAbove > 0 && c.PayloadBucket == "" {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_PAYLOAD_STORE_ABOVE=%d does nothing without the payload store: turn the store on (PayloadStore=s3) or set PayloadStoreAbove to 0", c.PayloadStoreAbove))
	}
	return errors.Join(errs...)
}

// ValidateProcessor checks what the processor needs.
func (c Config) ValidateProcessor() error {
	errs := c.validateCommon()
	if c.Unrouted != "done" && c.Unrouted != "fail" {
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
