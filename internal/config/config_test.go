package config

import (
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Table != DefaultTable || c.Shards != ledger.DefaultShards || c.Retention != ledger.DefaultRetention || c.LogLevel != DefaultLogLevel ||
		c.Payload != DefaultPayload || c.Stage != DefaultStage {
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

// Settings whose default belongs to the code that uses them stay zero
// when unset, so that the default is written once, there (the handlers'
// wire tests pin what they turn a zero into).
func TestUnsetSettingsStayZeroForTheirCodesDefault(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxBody != 0 || c.Mismatch != "" || c.MaxAttempts != 0 || c.ReclaimBatch != 0 || c.ReclaimMaxQueue != 0 ||
		c.ReclaimChain != 0 || c.Lease != 0 || c.Unrouted != "" || c.PayloadStoreAbove != 0 {
		t.Fatalf("unset settings were given values here: %+v", c)
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
		if (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), "LargeBodyStoreDays")) {
			t.Errorf("HOOKLEDGER_MAX_BODY=%s: %v, want ok=%v", tt.v, err, tt.ok)
		}
	}
}

func TestReclaimerSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"HOOKLEDGER_QUEUE_URL": "q"}))
	if err != nil || c.ReclaimMaxQueue != 0 || c.ReclaimChain != 0 || c.ReclaimBatch != 0 || c.FunctionName != "" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	if err := c.ValidateReclaimer(); err != nil {
		t.Fatal(err)
	}
	c, err = Load(env(map[string]string{"HOOKLEDGER_QUEUE_URL": "q", "HOOKLEDGER_RECLAIM_MAX_QUEUE": "0", "HOOKLEDGER_RECLAIM_CHAIN": "0",
		"AWS_LAMBDA_FUNCTION_NAME": "stack-reclaimer"}))
	if err != nil || c.ReclaimMaxQueue != Off || c.ReclaimChain != Off || c.FunctionName != "stack-reclaimer" {
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
		{"2 MB body without a store", with("HOOKLEDGER_MAX_BODY", "2097152"), "LargeBodyStoreDays"},
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

// HOOKLEDGER_SETTINGS (the template's PipelineSettings) sets the pipeline's
// settings in one JSON object; each member reads as its variable would.
func TestSettingsObjectSetsTheVariables(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{SettingsVar: `{"HOOKLEDGER_MAX_ATTEMPTS":"8","LOG_LEVEL":"warn","HOOKLEDGER_RECLAIM_CHAIN":0,` +
		`"HOOKLEDGER_MAX_BODY":524288,"HOOKLEDGER_RECLAIM_AFTER":"5s","HOOKLEDGER_MISMATCH":"reject"}`}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxAttempts != 8 || c.LogLevel != "warn" || c.ReclaimChain != Off || c.MaxBody != 512*1024 || c.ReclaimAfter != 5*time.Second || c.Mismatch != "reject" {
		t.Fatalf("%+v", c)
	}
	// Its values are checked as the variables are.
	if _, err := Load(env(map[string]string{SettingsVar: `{"HOOKLEDGER_MAX_ATTEMPTS":"often"}`})); err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_MAX_ATTEMPTS") {
		t.Errorf("a bad value: %v", err)
	}
	// What the deployment says replaces what the function inherited (an
	// emulator hands its own LOG_LEVEL to the functions it runs).
	if c, err := Load(env(map[string]string{SettingsVar: `{"LOG_LEVEL":"debug"}`, "LOG_LEVEL": "INFO", "HOOKLEDGER_MAX_ATTEMPTS": "3"})); err != nil ||
		c.LogLevel != "debug" || c.MaxAttempts != 3 {
		t.Errorf("over an inherited environment: %v %q %d", err, c.LogLevel, c.MaxAttempts)
	}
	for _, empty := range []string{"", "{}", "  "} {
		if c, err := Load(env(map[string]string{SettingsVar: empty})); err != nil || c.MaxAttempts != 0 {
			t.Errorf("%s=%q: %v %+v", SettingsVar, empty, err, c)
		}
	}
}

// A member it does not take, or a document that is not an object of
// strings, stops the cold start with what to do; nothing is dropped.
func TestSettingsObjectRefusesWhatItCannotApply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{SettingsVar: `{"HOOKLEDGER_MAX_ATTEMPT":"8"}`}, []string{`unknown setting "HOOKLEDGER_MAX_ATTEMPT"`, "HOOKLEDGER_MAX_ATTEMPTS", "LOG_LEVEL", "PipelineSettings"}},
		{map[string]string{SettingsVar: `{"HOOKLEDGER_RETENTION":"30d"}`}, []string{`unknown setting "HOOKLEDGER_RETENTION"`, "RetentionDays"}},
		{map[string]string{SettingsVar: `{"HOOKLEDGER_TABLE":"other"}`}, []string{`unknown setting "HOOKLEDGER_TABLE"`}},
		{map[string]string{SettingsVar: `{"LOG_LEVEL":"warn","LOG_LEVEL":"debug"}`}, []string{SettingsVar, "LOG_LEVEL"}},
		{map[string]string{SettingsVar: `{"LOG_LEVEL":true}`}, []string{"LOG_LEVEL is true", "want a string"}},
		{map[string]string{SettingsVar: `["LOG_LEVEL"]`}, []string{SettingsVar, "JSON object"}},
		{map[string]string{SettingsVar: `LOG_LEVEL=warn`}, []string{SettingsVar, "JSON object"}},
	} {
		_, err := Load(env(tc.env))
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v, want it to say %q", tc.env, err, w)
			}
		}
	}
}

// HOOKLEDGER_RETENTION takes the template's whole days (RetentionDays) as
// well as a Go duration.
func TestRetentionInDays(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour, "168h": 168 * time.Hour, "48h": 48 * time.Hour} {
		c, err := Load(env(map[string]string{"HOOKLEDGER_RETENTION": v}))
		if err != nil || c.Retention != want {
			t.Errorf("HOOKLEDGER_RETENTION=%s: %v %v, want %v", v, c.Retention, err, want)
		}
	}
	for _, v := range []string{"0d", "-1d", "1.5d", "d", "106752d", "forever"} {
		if _, err := Load(env(map[string]string{"HOOKLEDGER_RETENTION": v})); err == nil || !strings.Contains(err.Error(), "HOOKLEDGER_RETENTION") {
			t.Errorf("HOOKLEDGER_RETENTION=%s: %v", v, err)
		}
	}
}

// The lines carry their time under "timestamp" in RFC 3339, which Lambda's
// JSON log format reads (without it Lambda files every line as INFO and adds
// a timestamp of its own), to the millisecond: a line is billed by the byte,
// and CloudWatch keeps its events' times in milliseconds; levels filter as
// set.
func TestLogLinesCarryAnRFC3339Timestamp(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"LOG_LEVEL": "info"}))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	log := c.Logger(&out)
	log.Debug("hidden")
	log.Warn("webhook", "result", "accepted", slog.Group("at", "time", "kept"))
	var line map[string]any
	if err := json.Unmarshal([]byte(out.String()), &line); err != nil {
		t.Fatalf("want one JSON line, got %q: %v", out.String(), err)
	}
	ts, _ := line["timestamp"].(string)
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || line["time"] != nil {
		t.Errorf("line %q: want an RFC 3339 timestamp under \"timestamp\" and no \"time\" (%v)", out.String(), err)
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(ts) {
		t.Errorf("timestamp %q: want UTC to the millisecond (2026-12-03T09:49:30.572Z)", ts)
	}
	if line["msg"] != "webhook" || line["level"] != "WARN" || line["result"] != "accepted" || line["at"].(map[string]any)["time"] != "kept" {
		t.Errorf("line %q lost more than the key's name", out.String())
	}
}
