//go:build crashpoints

package idempotency_test

import (
	"strings"
	"testing"

	"github.com/hookledger/hookledger/idempotency"
)

// TestCrashPoints kills the child at the package's own crash points
// (proof builds only: go test -tags crashpoints): right after the claim,
// before the function ran, and right after it returned, before its result
// was stored. Either way the key is refused until the dead invocation's
// deadline and then runs as attempt 2 with the same downstream key.
func TestCrashPoints(t *testing.T) {
	crashChild(t)
	t.Parallel()
	k, _ := idempotency.KeyOf("charge", "order-1")
	for _, tt := range []struct {
		point string
		runs  []string // what the payments API saw
	}{
		{"idempotency.after_claim", []string{k, "2", "|"}},
		{"idempotency.after_call", []string{k, "1", "|", k, "2", "|"}},
	} {
		t.Run(tt.point, func(t *testing.T) {
			t.Parallel()
			r := newCrashRun(t)
			if code := r.child(t, "TestCrashPoints", "IDEMPOTENCY_CRASH="+tt.point); code != crashExit {
				t.Fatalf("child exited %d, want the crash (%d)", code, crashExit)
			}
			r.retry(t)
			if got := r.runs(t); strings.Join(got, " ") != strings.Join(tt.runs, " ") {
				t.Fatalf("payments API saw %v, want %v", got, tt.runs)
			}
		})
	}
}
