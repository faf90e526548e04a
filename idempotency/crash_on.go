//go:build crashpoints

package idempotency

import (
	"os"
	"slices"
	"strings"
)

// crashExitCode is the status a crash point exits with.
const crashExitCode = 86

// crash exits the process at once, as a killed Lambda would (no deferred
// code, no buffered output), when IDEMPOTENCY_CRASH lists point among its
// comma-separated names (idempotency.after_claim, idempotency.after_call).
// Only proof builds (-tags crashpoints) have it: TestCrashPoints runs the
// package's test binary as a child that dies here.
func crash(point string) {
	if slices.Contains(strings.Split(os.Getenv("IDEMPOTENCY_CRASH"), ","), point) {
		os.Stderr.WriteString("crashpoint: crashing at " + point + "\n")
		os.Exit(crashExitCode)
	}
}
