package bench

import (
	"math"
	"testing"
)

func TestDoorCost(t *testing.T) {
	// One forwarded event: an EventBridge event and nothing else.
	if got := DoorCost(DoorProfile{Events: 1}, 256); math.Abs(got-1.00) > 1e-9 {
		t.Errorf("one event per event: $%.4f per million, want $1.00", got)
	}
	// 10 ms at 256 MB per event: 0.0025 GB-s, $0.0333 per million.
	if got := DoorCost(DoorProfile{LambdaMS: 10}, 256); math.Abs(got-0.0025*1e6*PriceLambdaArm.USD) > 1e-9 {
		t.Errorf("duration: $%.4f", got)
	}
}
