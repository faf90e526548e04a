package main

import (
	"bytes"
	"strings"
	"testing"
)

// usageCase is one command line that must be refused with exit 2 and a
// message containing want, before anything is read or created.
type usageCase struct {
	args []string
	want string
}

func checkUsage(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := run(t.Context(), tc.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote %q to stdout; want nothing", tc.args, out.String())
		}
	}
}

// TestDevRefusesBadNumbers: --reclaim-every 0 used to panic in
// time.NewTicker, --function-timeout 0 or less started every batch past its
// deadline, and --pollers 0 was silently raised to 1. Each is refused
// before any configuration is read, as is an --only that names no part.
func TestDevRefusesBadNumbers(t *testing.T) {
	t.Setenv("HOOKLEDGER_TABLE", "") // nothing configured: the flags are refused first
	checkUsage(t, []usageCase{
		{[]string{"dev", "--reclaim-every", "0s"}, "--reclaim-every 0s: want a positive interval, e.g. --reclaim-every 10s"},
		{[]string{"dev", "--reclaim-every", "-5s"}, "--reclaim-every -5s"},
		{[]string{"dev", "--function-timeout", "-1s"}, "--function-timeout -1s: want a positive deadline"},
		{[]string{"dev", "--function-timeout", "0"}, "--function-timeout 0s"},
		{[]string{"dev", "--pollers", "0"}, "--pollers 0: want at least 1"},
		{[]string{"dev", "--pollers", "-2"}, "--pollers -2"},
		// --only names parts; anything else is refused with the list.
		{[]string{"dev", "--only", "recever"}, `--only "recever": unknown part "recever"; want a comma-separated list of receiver, processor, reclaimer, e.g. --only receiver`},
		{[]string{"dev", "--only", "receiver,,processor"}, `unknown part ""`},
		{[]string{"dev", "--only", ""}, `--only "": unknown part ""`},
		// A normal build has no crash points: --crash says how to get them.
		{[]string{"dev", "--crash", "step.notify.ran"}, "go run -tags crashpoints ./cmd/hookledger dev"},
	})
}
