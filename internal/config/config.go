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

// Config is every setting, with its environment variable.
type Config struct {
	Table        string        // HOOKLEDGER_TABLE (default "hookledger")
	QueueURL     string        // HOOKLEDGER_QUEUE_URL (receiver, reclaimer)
	SourcesJSON  string        // HOOKLEDGER_SOURCES (JSON, or an ssm:/secretsmanager: reference to it), or the file HOOKLEDGER_SOURCES_FILE (receiver)
	SecretGrants string        // HOOKLEDGER_SECRET_GRANTS: what the deployed role may read (template.yaml sets it; unset: not checked)
	MaxBody      int           // HOOKLEDGER_MAX_BODY bytes (default 262144)
	Retention    time.Duration // HOOKLEDGER_RETENTION (default 168h)
	Shards       int           // HOOKLEDGER_SHARDS (default 16)
	ReclaimAfter time.Duration // HOOKLEDGER_RECLAIM_AFTER (default 2m)
	Mismatch     string        // HOOKLEDGER_MISMATCH: flag (default) or reject
	MaxAttempts  int           // HOOKLEDGER_MAX_ATTEMPTS (default 5)
	MaxReclaims  int           // HOOKLEDGER_MAX_RECLAIMS (default 5)
	ReclaimBatch int           // HOOKLEDGER_RECLAIM_BATCH per shard per run (default 25)
	Lease        time.Duration // HOOKLEDGER_LEASE, used outside Lambda (default 60s)
	Unrouted     string        // HOOKLEDGER_UNROUTED: done (default) or fail, for events no route matches
	LogLevel     string        // LOG_LEVEL: debug, info (default), warn, error
	Stage        string        // HOOKLEDGER_STAGE, the metrics' Stage dimension (default "local")
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
		MaxAttempts: 5, MaxReclaims: 5, ReclaimBatch: 25, Lease: 60 * time.Second, Unrouted: "done", LogLevel: "info",
		Stage: "local", EmitMetrics: getenv("AWS_LAMBDA_FUNCTION_NAME") != "" || getenv("HOOKLEDGER_METRICS") == "1",
	}
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
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
	str("HOOKLEDGER_SOURCES", &c.SourcesJSON)
	str("HOOKLEDGER_SECRET_GRANTS", &c.SecretGrants)
	if f := getenv("HOOKLEDGER_SOURCES_FILE"); f != "" && c.SourcesJSON == "" {
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
	num("HOOKLEDGER_MAX_RECLAIMS", &c.MaxReclaims)
	num("HOOKLEDGER_RECLAIM_BATCH", &c.ReclaimBatch)
	dur("HOOKLEDGER_LEASE", &c.Lease)
	str("HOOKLEDGER_UNROUTED", &c.Unrouted)
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
	if c.Retention < 24*time.Hour {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_RETENTION=%v: keep at least 24h, longer than your senders retry (Stripe: 3 days)", c.Retention))
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
	if c.MaxBody > MaxBodyLimit {
		errs = append(errs, fmt.Errorf("HOOKLEDGER_MAX_BODY=%d: at most %d (1 MiB): the ledger stores a payload in one DynamoDB item of 400 KB after compression, "+
			"so larger bodies could be accepted only to fail; lower it (template parameter MaxBodyBytes)", c.MaxBody, MaxBodyLimit))
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
	return errors.Join(errs...)
}

// LedgerOptions are the ledger's options from c.
func (c Config) LedgerOptions() ledger.Options {
	return ledger.Options{Table: c.Table, Shards: c.Shards, Retention: c.Retention, ReclaimAfter: c.ReclaimAfter}
}
