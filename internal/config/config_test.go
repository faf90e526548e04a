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
