package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchRefusesBadNumbers: --throughput-events -1 panicked in make,
// --concurrency 0 (and --recovery-consumers 0) waited out the whole
// deadline, --recovery-tenants 0 divided by zero. Every numeric flag is
// checked before the endpoint is even looked at.
func TestBenchRefusesBadNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--throughput-events", "-1"}, "--throughput-events -1: want at least 1 (default 400)"},
		{[]string{"--concurrency", "0"}, "--concurrency 0: want 1 to 1000 (default 8)"},
		{[]string{"--concurrency", "5000"}, "--concurrency 5000"},
		{[]string{"--timing-events", "0"}, "--timing-events 0"},
		{[]string{"--compare-events", "-3"}, "--compare-events -3"},
		{[]string{"--dup-rate", "1.5"}, "--dup-rate 1.5: want 0 to 1"},
		{[]string{"--dup-rate", "-0.1"}, "--dup-rate -0.1"},
		{[]string{"--memory", "64"}, "--memory 64: want 128 to 10240"},
		{[]string{"--batching-scale", "0"}, "--batching-scale 0"},
		{[]string{"--cost-samples", "0"}, "--cost-samples 0"},
		{[]string{"--coldstart-runs", "0"}, "--coldstart-runs 0"},
		{[]string{"--latency-events", "-1"}, "--latency-events -1"},
		{[]string{"--recovery-records", "0"}, "--recovery-records 0"},
		{[]string{"--recovery-account-records", "0"}, "--recovery-account-records 0"},
		{[]string{"--recovery-target", "-1"}, "--recovery-target -1"},
		{[]string{"--recovery-timeout", "0s"}, "--recovery-timeout 0s: want a positive duration (default 1m0s)"},
		{[]string{"--recovery-schedule", "-1m"}, "--recovery-schedule -1m0s"},
		{[]string{"--recovery-consumers", "0"}, "--recovery-consumers 0"},
		{[]string{"--recovery-tenants", "0"}, "--recovery-tenants 0"},
		{[]string{"throughput"}, "unexpected argument"},
	} {
		var out, errb bytes.Buffer
		// A non-loopback endpoint would be refused too: the flags come first.
		args := append([]string{"bench", "--endpoint", "https://dynamodb.us-east-1.amazonaws.com"}, tc.args...)
		if code := run(t.Context(), args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	// The defaults pass (no section runs, so nothing is called).
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"bench", "--endpoint", "http://localhost:1", "--only", ""}, &out, &errb); code != 0 {
		t.Errorf("defaults: exit %d, stderr %q", code, errb.String())
	}
}

// TestLabCommandsRefuseBadNumbers: demo's and outage's --timeout 0 gave up
// at once, and payments --fail-every -1 silently never failed.
func TestLabCommandsRefuseBadNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--timeout", "0s"}, "demo: --timeout 0s: want a positive duration (default 3m0s)"},
		{[]string{"demo", "--timeout", "-1m"}, "demo: --timeout -1m0s"},
		{[]string{"outage", "--timeout", "0s"}, "outage: --timeout 0s: want a positive duration (default 2m0s)"},
		{[]string{"queue-outage", "--length", "1m"}, "queue-outage: --length 1m0s: want at least 4m0s"},
		{[]string{"queue-outage", "--events", "0"}, "queue-outage: --events 0: want at least 4"},
		{[]string{"payments", "--fail-every", "-1"}, "payments: --fail-every -1: want at least 0 (default 0) (0: never fail)"},
	} {
		var out, errb bytes.Buffer
		if code := run(t.Context(), tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
