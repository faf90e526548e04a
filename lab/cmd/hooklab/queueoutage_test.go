package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/awstest"
)

// TestQueueOutageRecoversWithinTheBound: the queue loses every message for
// two hours by the injected clock, long enough for the first events'
// doubling backoff to reach its hour. Once it works again, every event is
// done within two minutes; before, the first ones waited up to an hour.
func TestQueueOutageRecoversWithinTheBound(t *testing.T) {
	t.Parallel()
	res, err := queueOutage{length: 2 * time.Hour, events: 8}.run(t.Context(), awstest.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if !res.print(&out) {
		t.Fatalf("recovery took too long:\n%s", out.String())
	}
	t.Log("\n" + out.String())
}
