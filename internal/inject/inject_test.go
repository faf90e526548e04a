//go:build !crashpoints

package inject

import "testing"

// TestOffInNormalBuilds pins that a normal build injects nothing: the hooks
// are empty and no AWS middleware is added, whatever the environment says.
func TestOffInNormalBuilds(t *testing.T) {
	t.Setenv("HOOKLEDGER_CRASH", ReceiverAfterRecord)
	t.Setenv("HOOKLEDGER_FAULTS", "*.500=1")
	if Enabled {
		t.Fatal("Enabled in a normal build")
	}
	Crash(ReceiverAfterRecord) // must return
	if opts := AWSOptions(); len(opts) != 0 {
		t.Fatalf("%d AWS options in a normal build", len(opts))
	}
}
