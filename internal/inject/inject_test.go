//go:build !crashpoints

package inject

import "testing"

// TestOffInNormalBuilds pins that a normal build injects nothing: Crash is
// empty whatever the environment says.
func TestOffInNormalBuilds(t *testing.T) {
	t.Setenv("HOOKLEDGER_CRASH", ReceiverAfterRecord)
	if Enabled {
		t.Fatal("Enabled in a normal build")
	}
	Crash(ReceiverAfterRecord) // must return
}
