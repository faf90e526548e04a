package bench

import (
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
	if st.BatchSize != 10 || st.MemoryMB == 0 || st.LogRetentionDays == 0 || st.ReclaimEvery != time.Minute || len(st.WindowChoices) == 0 {
		t.Fatalf("stack %+v", st)
	}
	if st.PlatformLines() {
		t.Error("the template's SystemLogLevel keeps Lambda's own lines; the model would price them")
	}
	if n := st.AlarmsWith("HasHttpApi"); n == 0 || n > st.AlarmsWith("HasHttpApi", "HasFunctionUrl", "HasBothFrontDoors") {
		t.Errorf("alarms at the defaults: %d", n)
	}
	if line := st.AccessLogLine(); len(line) < 50 || line[0] != '{' {
		t.Errorf("access log line %q", line)
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

func TestModelBatch(t *testing.T) {
	if b := ModelBatch(10, 0, 10, 5); b != 1 {
		t.Errorf("no window: %v", b)
	}
	if b := ModelBatch(1000, 5*time.Second, 10, 5); math.Abs(b-10) > 1e-6 {
		t.Errorf("a flood fills batches: %v", b)
	}
	if lo, hi := ModelBatch(10, time.Second, 10, 5), ModelBatch(10, 2*time.Second, 10, 5); !(lo > 1 && hi > lo && hi < 10) {
		t.Errorf("1 s %v, 2 s %v", lo, hi)
	}
}
