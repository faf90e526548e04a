package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/awstest"
)

// TestRecoverySectionRuns runs `hooklab bench --only recovery` on a small
// backlog against the emulator: every record re-driven once, none twice,
// all processed to done.
func TestRecoverySectionRuns(t *testing.T) {
	t.Parallel()
	ep := awstest.Endpoint(t)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"bench", "--endpoint", ep, "--only", "recovery",
		"--recovery-records", "300", "--recovery-account-records", "40", "--recovery-timeout", "30s"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	report := out.String()
	for _, want := range []string{
		`| re-driven `, `| 300 (requeued 300, reset 0)`,
		`| messages: keys / more than one per key / processor failures `, `| 300 / 0 / 0 `,
		`| records done afterwards / still received `, `| 300 / 0 `,
		`| write units per re-driven record (table + due index)`,
		`records re-driven per minute`, `Emulator ceiling:`, `AWS, reclaimer alone:`,
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	// One conditional write per record (plus the run lock's two writes
	// over the whole pass) and the due index's delete + put.
	if !regexp.MustCompile(`\| 1(\.0[0-9])? \+ 2 `).MatchString(report) {
		t.Errorf("write units per record are not 1 + 2:\n%s", report)
	}
	if !regexp.MustCompile(`\*\*records re-driven per minute\*\* +\| \*\*[1-9][0-9]*\*\*`).MatchString(report) {
		t.Errorf("no positive rate in the report:\n%s", report)
	}
}
