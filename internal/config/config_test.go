package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Table != "hookledger" || c.Shards != 16 || c.Retention != 168*time.Hour || c.Mismatch != "flag" || c.MaxBody != 262144 {
		t.Fatalf("%+v", c)
	}
	if err := c.ValidateProcessor(); err != nil {
		t.Errorf("processor needs nothing else: %v", err)
	}
	err = c.ValidateReceiver()
	if err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_QUEUE_URL") || !strings.Contains(err.Error(), "HOOKLEDGER_SOURCES") {
		t.Errorf("receiver without queue and sources: %v", err)
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	t.Parallel()
	for k, v := range map[string]string{
		"HOOKLEDGER_SHARDS": "-1", "HOOKLEDGER_RETENTION": "forever", "HOOKLEDGER_MAX_BODY": "1MB", "HOOKLEDGER_LEASE": "0s",
	} {
		_, err := Load(env(map[string]string{k: v}))
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	c, _ := Load(env(map[string]string{"HOOKLEDGER_RETENTION": "1h", "HOOKLEDGER_MISMATCH": "maybe", "LOG_LEVEL": "loud",
		"HOOKLEDGER_QUEUE_URL": "q", "HOOKLEDGER_SOURCES": "{}"}))
	err := c.ValidateReceiver()
	for _, want := range []string{"HOOKLEDGER_RETENTION", "HOOKLEDGER_MISMATCH", "LOG_LEVEL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error naming %s, got %v", want, err)
		}
	}
}

func TestDefaultsMatchTheReceiversOwn(t *testing.T) {
	t.Parallel()
	// The receiver's zero-value defaults (receiver.DefaultMaxBody, "flag")
	// are repeated here as literals so that package config does not import
	// the receiver; receiver's own test pins the same values.
	c, _ := Load(env(nil))
	if c.MaxBody != 256*1024 || c.Mismatch != "flag" {
		t.Fatalf("%d %q", c.MaxBody, c.Mismatch)
	}
}

// HOOKLEDGER_MAX_BODY above what one ledger item can hold after compression
// used to be accepted (up to Lambda's 6 MB), so bodies were answered 503
// after their record was written. It is now capped with a message.
func TestMaxBodyIsCappedToWhatTheLedgerCanHold(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v  string
		ok bool
	}{{"262144", true}, {"1048576", true}, {"1048577", false}, {"6291456", false}} {
		c, err := Load(func(k string) string {
			return map[string]string{"HOOKLEDGER_MAX_BODY": tt.v, "HOOKLEDGER_QUEUE_URL": "q", "HOOKLEDGER_SOURCES": "{}"}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		err = c.ValidateReceiver()
		if (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), "MaxBodyBytes")) {
			t.Errorf("HOOKLEDGER_MAX_BODY=%s: %v, want ok=%v", tt.v, err, tt.ok)
		}
	}
}

func TestReclaimerSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"HOOKLEDGER_QUEUE_URL": "q"}))
	if err != nil || c.ReclaimMaxQueue != 1000 || c.ReclaimChain != 10 || c.ReclaimBatch != 25 || c.FunctionName != "" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	if err := c.ValidateReclaimer(); err != nil {
		t.Fatal(err)
	}
	c, err = Load(env(map[string]string{"HOOKLEDGER_QUEUE_URL": "q", "HOOKLEDGER_RECLAIM_MAX_QUEUE": "0", "HOOKLEDGER_RECLAIM_CHAIN": "0",
		"AWS_LAMBDA_FUNCTION_NAME": "stack-reclaimer"}))
	if err != nil || c.ReclaimMaxQueue != 0 || c.ReclaimChain != 0 || c.FunctionName != "stack-reclaimer" {
		t.Fatalf("zeros turn pacing and continuations off: %+v %v", c, err)
	}
	for k, v := range map[string]string{"HOOKLEDGER_RECLAIM_MAX_QUEUE": "-1", "HOOKLEDGER_RECLAIM_CHAIN": "many"} {
		if _, err := Load(env(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	for k, v := range map[string]string{"HOOKLEDGER_RECLAIM_CHAIN": "16", "HOOKLEDGER_RECLAIM_BATCH": "1001", "HOOKLEDGER_DLQ_URL": "q"} {
		c, _ := Load(env(map[string]string{"HOOKLEDGER_QUEUE_URL": "q", k: v}))
		if err := c.ValidateReclaimer(); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}

// HOOKLEDGER_MAX_RECLAIMS used to bury an event after five re-drives,
// whatever interrupted it; the reclaimer now bounds such trouble by time.
// A deployment that still sets it is told so at start, not ignored.
func TestMaxReclaimsIsGone(t *testing.T) {
	t.Parallel()
	_, err := Load(env(map[string]string{"HOOKLEDGER_MAX_RECLAIMS": "8"}))
	if err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_MAX_RECLAIMS is gone") || !strings.Contains(err.Error(), "unset it") {
		t.Fatalf("HOOKLEDGER_MAX_RECLAIMS=8: %v", err)
	}
	c, err := Load(env(map[string]string{"HOOKLEDGER_MAX_ATTEMPTS": "3"}))
	if err != nil || c.MaxAttempts != 3 {
		t.Fatalf("HOOKLEDGER_MAX_ATTEMPTS=3: %d %v", c.MaxAttempts, err)
	}
}

func TestPayloadSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"HOOKLEDGER_QUEUE_URL": "q", "HOOKLEDGER_SOURCES": "{}"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string // "" when valid
	}{
		{"defaults", with(), ""},
		{"on-trouble", with("HOOKLEDGER_PAYLOAD", "on-trouble"), ""},
		{"unknown policy", with("HOOKLEDGER_PAYLOAD", "sometimes"), "HOOKLEDGER_PAYLOAD"},
		{"2 MB body without a store", with("HOOKLEDGER_MAX_BODY", "2097152"), "PayloadStore=s3"},
		{"2 MB body with a store", with("HOOKLEDGER_MAX_BODY", "2097152", "HOOKLEDGER_PAYLOAD_BUCKET", "b"), ""},
		{"6 MiB with a store", with("HOOKLEDGER_MAX_BODY", "6291456", "HOOKLEDGER_PAYLOAD_BUCKET", "b"), ""},
		{"past Lambda's 6 MB", with("HOOKLEDGER_MAX_BODY", "6291457", "HOOKLEDGER_PAYLOAD_BUCKET", "b"), "6 MiB"},
		{"store forgets before the ledger", with("HOOKLEDGER_PAYLOAD_BUCKET", "b", "HOOKLEDGER_PAYLOAD_STORE_DAYS", "3"), "at least 7"},
		{"store keeps as long", with("HOOKLEDGER_PAYLOAD_BUCKET", "b", "HOOKLEDGER_PAYLOAD_STORE_DAYS", "7"), ""},
		{"prefix without slash", with("HOOKLEDGER_PAYLOAD_BUCKET", "b", "HOOKLEDGER_PAYLOAD_PREFIX", "bodies"), "HOOKLEDGER_PAYLOAD_PREFIX"},
	} {
		c, err := Load(env(tt.env))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		err = c.ValidateReceiver()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error naming %q", tt.name, err, tt.want)
		}
	}
	c, _ := Load(env(map[string]string{"HOOKLEDGER_PAYLOAD": "never"}))
	if err := c.ValidateProcessor(); err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_PAYLOAD") {
		t.Errorf("processor with an unknown policy: %v", err)
	}
}

// Settings that used to be dropped, replaced or misread without a word now
// stop the cold start with the variable's name.
func TestSettingsThatWouldBeIgnoredAreErrors(t *testing.T) {
	t.Parallel()
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{"HOOKLEDGER_QUEUE_URL": "q", "HOOKLEDGER_SOURCES": "{}"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOOKLEDGER_METRICS": "maybe"}, "HOOKLEDGER_METRICS"},
		{map[string]string{"HOOKLEDGER_SOURCES_FILE": "/nonexistent"}, "both set"},
		{map[string]string{"HOOKLEDGER_TABLE": "   "}, "HOOKLEDGER_TABLE is blank"},
		{map[string]string{"HOOKLEDGER_PAYLOAD_STORE_ABOVE": "1024"}, "HOOKLEDGER_PAYLOAD_STORE_ABOVE=1024 does nothing without the payload store"},
		{map[string]string{"HOOKLEDGER_PAYLOAD_BUCKET": "b", "HOOKLEDGER_PAYLOAD_STORE_DAYS": "3"}, "at least 7"},
	} {
		c, err := Load(env(base(tc.env)))
		if err == nil {
			err = c.ValidateReceiver()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.env, err, tc.want)
		}
	}
	for v, on := range map[string]bool{"true": true, "1": true, "ON": true, "false": false, "0": false, "": false} {
		c, err := Load(env(map[string]string{"HOOKLEDGER_METRICS": v}))
		if err != nil || c.EmitMetrics != on {
			t.Errorf("HOOKLEDGER_METRICS=%q: metrics %v, %v; want %v", v, c.EmitMetrics, err, on)
		}
	}
	// A store kept far longer than the ledger is fine, however long.
	c, err := Load(env(base(map[string]string{"HOOKLEDGER_PAYLOAD_BUCKET": "b", "HOOKLEDGER_PAYLOAD_STORE_DAYS": "200000"})))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateReceiver(); err != nil {
		t.Errorf("200,000 days: %v", err)
	}
}
