package bench

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// The cost model reads the deployment from template.yaml, not from a copy
// of its numbers.
func TestReadStackReadsTheTemplate(t *testing.T) {
	st, err := ReadStack("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if st.BatchSize != 10 || st.MemoryMB == 0 || st.ProcessorMB < st.MemoryMB || st.LogRetentionDays == 0 || st.ReclaimEvery != time.Minute || len(st.WindowChoices) == 0 {
		t.Fatalf("stack %+v", st)
	}
	if st.PlatformLines() {
		t.Error("the template's SystemLogLevel keeps Lambda's own lines; the model would price them")
	}
	if n := st.AlarmsWith("HasHttpApi"); n == 0 || n > st.AlarmsWith("HasHttpApi", "HasFunctionUrl", "HasBothFrontDoors") {
		t.Errorf("alarms at the defaults: %d", n)
	}
	if line := st.AccessLogLine(); len(line) < 50 || !json.Valid([]byte(line)) {
		t.Errorf("access log line %q: want a JSON object", line)
	}
}

// Batches amortise the processor's invocation and the queue delete, not
// the send or the receives.
func TestCostAmortisesWhatABatchShares(t *testing.T) {
	nw := Profile{ReceiverMS: 30, ProcessorMS: 20, WCU: 4, SQSSend: 1, SQSChunks: 1, LogBytes: 500}
	dp := Profile{ReceiverMS: 10, WCU: 1}
	a := Assumptions{MemoryMB: 256, RetentionDays: 7, LogRetentionDays: 30, Batch: 1, ReceivesPerEvent: 1, BatchMS: func(b float64) float64 { return 20 + 3*(b-1) }}
	one := Cost(nw, dp, 0.3, a)
	a.Batch = 10
	ten := Cost(nw, dp, 0.3, a)
	if d := one.SQS - ten.SQS; math.Abs(d-0.7*0.9*PriceSQS.USD) > 1e-9 {
		t.Errorf("SQS saving %v, want the deletes of 9 in 10 batches", d)
	}
	if one.DynamoDB != ten.DynamoDB || one.APIGateway != ten.APIGateway || one.SQSReceives != ten.SQSReceives {
		t.Errorf("batching changed what it does not share: %+v vs %+v", one, ten)
	}
	if ten.Lambda >= one.Lambda {
		t.Errorf("Lambda %v at batches of 10, %v at one", ten.Lambda, one.Lambda)
	}
}

// The model of the event source: no window invokes with one message at
// low rates; a window fills batches only where traffic is dense enough, and
// holds a quiet system's batch for the 20 s poll (AWS: "Lambda might wait
// for up to 20 seconds"); pollers with nothing to take make a receive every
// 20 s each.
func TestModelESM(t *testing.T) {
	const day = 24 * time.Hour
	quiet0 := ModelESM(0.03, 0, 10, 5, 30*time.Millisecond, day, 1)
	quiet2 := ModelESM(0.03, 2*time.Second, 10, 5, 30*time.Millisecond, day, 1)
	busy2 := ModelESM(30, 2*time.Second, 10, 5, 30*time.Millisecond, time.Hour, 1)
	if quiet0.Batch != 1 || quiet0.P99 > 1 {
		t.Errorf("no window at 0.03 events/s: %+v", quiet0)
	}
	if quiet2.P50 < 15000 || quiet2.P99 > 20001 {
		t.Errorf("a 2 s window at 0.03 events/s should wait for the 20 s poll: %+v", quiet2)
	}
	if busy2.Batch < 9 || busy2.P99 > 2500 {
		t.Errorf("a 2 s window at 30 events/s should fill batches within about the window: %+v", busy2)
	}
	if idle := ModelESM(1e-9, 0, 10, 5, 0, day, 1); math.Abs(idle.EmptyPerSecond-0.25) > 0.01 {
		t.Errorf("idle pollers make %v empty receives a second, want 5 per 20 s", idle.EmptyPerSecond)
	}
}
