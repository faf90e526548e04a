package hookledgertest_test

import (
	"encoding/json"
	"testing"

	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/hookledgertest"
)

// ForwardEvents forwards each event once with the ledger's identity; a
// crash between the put and its record forwards it again under the same
// key, which is what the bus's consumers deduplicate on.
func TestForwardEvents(t *testing.T) {
	t.Parallel()
	tr := hookledgertest.New(hookledger.ForwardEvents)
	e := hookledger.Event{Source: "stripe", Tenant: "acme", ID: "evt_fw", Type: "invoice.paid", Body: []byte(`{"id":"evt_fw"}`)}
	if res := tr.Run(t.Context(), e, hookledgertest.CrashAfter("forward")); res.Status != hookledgertest.Crashed {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), e); res.Status != hookledgertest.Done || res.Steps["forward"] == "" {
		t.Fatal(res)
	}
	if res := tr.Run(t.Context(), e); res.Status != hookledgertest.Done || len(res.Ran) != 0 {
		t.Fatalf("a redelivery forwarded again: %v", res)
	}
	fw := tr.Forwarded()
	if len(fw) != 2 || fw[0].Key != fw[1].Key || fw[0].Key != e.IdempotencyKey("forward") {
		t.Fatalf("forwarded %+v", fw)
	}
	var d struct {
		Hookledger struct {
			Key string `json:"key"`
		} `json:"hookledger"`
		Event json.RawMessage `json:"event"`
	}
	if err := json.Unmarshal(fw[1].Detail, &d); err != nil {
		t.Fatal(err)
	}
	if fw[1].EventSource != "hookledger.stripe" || fw[1].DetailType != "invoice.paid" || d.Hookledger.Key != fw[1].Key ||
		string(d.Event) != `{"id":"evt_fw"}` {
		t.Errorf("forwarded %s %s %s", fw[1].EventSource, fw[1].DetailType, fw[1].Detail)
	}
}
