//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/lab/providerstub"
	"github.com/hookledger/hookledger/ledger"
)

// TestReconcileDeployed drives the deployed reconciler function: a Stripe
// stand-in delivers invoices to the stack's HTTP API while the endpoint is
// down for some of them, then the reconciler (invoked as its schedule would)
// asks the stand-in's List Events, finds the lost ones and feeds them
// through the receiver function; the payments stub sees every invoice
// charged exactly once, and a second run finds nothing.
func TestReconcileDeployed(t *testing.T) {
	e := setup(t)
	fn := must(t, "HOOKLEDGER_E2E_RECONCILER")
	addr := must(t, "HOOKLEDGER_E2E_PROVIDERS_ADDR")
	payments := must(t, "HOOKLEDGER_E2E_PAYMENTS_URL")

	stub := providerstub.New(providerstub.Options{Client: &http.Client{Timeout: 30 * time.Second, Transport: localhostTransport()}})
	stub.Stripe.EnabledEvents = []string{"invoice.paid"}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the Stripe stand-in cannot listen on %s (the address the stack's ReconcileConfig names): %v", addr, err)
	}
	srv := &http.Server{Handler: stub, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	stub.Stripe.SetEndpoint(e.api+"/webhooks/stripe/acme", e.secret)

	var ids []ledger.Key
	var keys []string
	lost := 0
	for i := range 8 {
		stub.Stripe.SetDown(i%3 == 1)
		obj := fmt.Sprintf(`{"id":"in_rec_%s_%d","object":"invoice","amount_paid":%d,"currency":"eur","customer":"cus_%d"}`, e.runID, i, 3000+i, i)
		id, ok, err := stub.Stripe.Emit(t.Context(), "invoice.paid", json.RawMessage(obj))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			lost++
		}
		ids, keys = append(ids, e.id(id)), append(keys, id)
	}
	stub.Stripe.SetDown(false)
	if lost != 3 {
		t.Fatalf("%d deliveries lost, want 3 (did the stack answer the others? attempts %v)", lost, fmt.Sprint(stub.Stripe.Attempts()))
	}

	cfg, err := sdkconfig.Load(t.Context(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	lam := lambda.NewFromConfig(cfg)
	invoke := func() reconcile.Report {
		t.Helper()
		out, err := lam.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: &fn, Payload: []byte(`{"source":"e2e"}`)})
		if err != nil {
			t.Fatalf("invoke %s: %v", fn, err)
		}
		if out.FunctionError != nil {
			t.Fatalf("%s failed: %s: %s", fn, *out.FunctionError, out.Payload)
		}
		var sum reconcile.Summary
		if err := json.Unmarshal(out.Payload, &sum); err != nil || len(sum.Reports) != 1 {
			t.Fatalf("%s answered %s (%v)", fn, out.Payload, err)
		}
		return sum.Reports[0]
	}
	rep := invoke()
	if rep.Missing != lost || rep.Fed != lost || rep.Failed != 0 {
		t.Fatalf("first run: %+v %+v", rep.Counts, rep.Found)
	}
	e.waitStatus(t, e.settle, ledger.Done, ids...)

	resp, err := e.client.Get(payments + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		PerEvent map[string]int `json:"per_event"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if n := st.PerEvent[k]; n != 1 {
			t.Errorf("%s charged %d times, want exactly once", k, n)
		}
	}
	if rep := invoke(); rep.Missing != 0 || rep.InLedger != lost {
		t.Fatalf("second run: %+v", rep.Counts)
	}
}
