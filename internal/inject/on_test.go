//go:build crashpoints

package inject

import "testing"

// TestOnInProofBuilds pins that a crashpoints build forwards to the proof
// tooling: faults asked for by HOOKLEDGER_FAULTS become SDK middleware.
func TestOnInProofBuilds(t *testing.T) {
	t.Setenv("HOOKLEDGER_FAULTS", "dynamodb.500=0.5,seed=1")
	if !Enabled {
		t.Fatal("not Enabled in a crashpoints build")
	}
	if opts := AWSOptions(); len(opts) == 0 {
		t.Fatal("no AWS fault middleware although HOOKLEDGER_FAULTS is set")
	}
	Crash("no.such.point") // a point nobody armed returns
}
