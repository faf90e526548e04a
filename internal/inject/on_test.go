//go:build crashpoints

package inject

import "testing"

// TestOnInProofBuilds pins that a crashpoints build has the hooks live; a
// point nobody armed returns (TestCrashOnceAcrossProcesses proves one fires).
func TestOnInProofBuilds(t *testing.T) {
	if !Enabled {
		t.Fatal("not Enabled in a crashpoints build")
	}
	Crash("no.such.point")
}
