package reconcile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/lab/providerstub"
)

// handlerConfig is the configuration of a reconciler function with one
// Stripe source.
func handlerConfig(t *testing.T) config.Config {
	t.Helper()
	c, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c.SourcesJSON = `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_h"]}}}}`
	return c
}

// TestHandleEmitsMetrics runs the scheduled handler over one spec: the
// counts go out as one EMF line, zeros included, and a failed feed fails the
// run (so the function's Errors alarm fires).
func TestHandleEmitsMetrics(t *testing.T) {
	t.Parallel()
	stub := providerstub.New(providerstub.Options{})
	api := httptest.NewServer(stub)
	defer api.Close()
	stub.Stripe.SetEndpoint("http://127.0.0.1:1/unreachable", "whsec_h")
	for i := range 3 {
		stub.Stripe.Emit(t.Context(), "invoice.paid", json.RawMessage(fmt.Sprintf(`{"id":"in_%d"}`, i)))
	}
	c := handlerConfig(t)
	specs := fmt.Sprintf(`[{"source":"stripe","tenant":"acme","credential":"literal:sk_test_stub","api_url":%q,"min_age":"0s"}]`, api.URL)
	h, err := reconcile.FromConfig(c, reconcile.Settings{Specs: specs, WebhookURL: "http://127.0.0.1:1/webhooks/{source}/{tenant}"}, aws.Config{Region: "us-east-1"}, nil, quiet())
	if err != nil {
		t.Fatal(err)
	}
	var emf bytes.Buffer
	h.Metrics = metric.New(&emf, "test")
	accepting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Hookledger-Result", "accepted")
	}))
	defer accepting.Close()
	h.Reconciler.Ledger = &memLedger{keys: map[string]bool{}}
	h.Reconciler.Feeder = &reconcile.HTTPFeeder{Webhook: accepting.URL}

	sum, err := h.Handle(t.Context(), nil)
	if err != nil || len(sum.Reports) != 1 || sum.Reports[0].Fed != 3 {
		t.Fatalf("%+v %v", sum, err)
	}
	var line map[string]any
	json.Unmarshal(emf.Bytes(), &line)
	if line["ReconcileSeen"] != 3.0 || line["ReconcileMissing"] != 3.0 || line["ReconcileRecovered"] != 3.0 || line["ReconcileFailed"] != 0.0 {
		t.Fatalf("metrics %s", emf.String())
	}

	// A receiver that refuses: the run fails and says why.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer refusing.Close()
	h.Reconciler.Feeder = &reconcile.HTTPFeeder{Webhook: refusing.URL}
	emf.Reset()
	_, err = h.Handle(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), "3 missing events could not be fed") || !strings.Contains(emf.String(), `"ReconcileFailed":3`) {
		t.Fatalf("refused: %v %s", err, emf.String())
	}
}

// TestHandleCountsRequestedRedeliveries: a run that asks GitHub to
// redeliver reports them as ReconcileRequested, not ReconcileRecovered.
func TestHandleCountsRequestedRedeliveries(t *testing.T) {
	t.Parallel()
	stub := providerstub.New(providerstub.Options{})
	api := httptest.NewServer(stub)
	defer api.Close()
	stub.GitHub.SetEndpoint("http://127.0.0.1:1/unreachable", "gh_h")
	stub.GitHub.Emit(t.Context(), "push", json.RawMessage(`{"ref":"a"}`))
	srcs, _ := source.Parse([]byte(`{"github":{"provider":"github","tenants":{"acme":{"secrets":["literal:gh_h"]}}}}`))
	reg, _ := source.NewRegistry(srcs, &source.Secrets{})
	rc := &reconcile.Config{Sources: srcs, Registry: reg, Secrets: &source.Secrets{}, Retention: 168 * time.Hour}
	spec := reconcile.Spec{Source: "github", Tenant: "acme", Credential: "literal:ghp_stub", Hook: "repos/acme/shop/hooks/42", APIURL: api.URL, MinAge: "0s", Redeliver: true}
	var emf, logs bytes.Buffer
	h := &reconcile.Handler{Config: rc, Specs: []reconcile.Spec{spec}, Reconciler: &reconcile.Reconciler{Ledger: &memLedger{}, Log: quiet()}, Metrics: metric.New(&emf, "test"),
		Log: slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := h.Handle(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	json.Unmarshal(emf.Bytes(), &line)
	if line["ReconcileMissing"] != 1.0 || line["ReconcileRequested"] != 1.0 || line["ReconcileRecovered"] != 0.0 {
		t.Fatalf("metrics %s", emf.String())
	}
	if !strings.Contains(logs.String(), "redelivery requested") || strings.Contains(logs.String(), "recovered") {
		t.Fatalf("log %s", logs.String())
	}
}
