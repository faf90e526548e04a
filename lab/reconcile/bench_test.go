package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/lab/providerstub"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// BenchmarkReconcileStripe measures reconcile's own cost per event the
// provider lists (one op = one listed event): every event is listed
// (All), 90% are in the ledger (the emulator's), 10% are missing and fed to
// a receiver stand-in that answers accepted at once (the receiver's own cost
// per new event is measured in internal/receiver). It reports the AWS and
// provider API requests per listed event next to time and memory.
func BenchmarkReconcileStripe(b *testing.B) {
	m := awstest.NewMeter()
	cfg := awstest.Config(b, m.APIOption)
	table := awstest.Table(b, cfg)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table})
	if err != nil {
		b.Fatal(err)
	}
	var apiCalls, fed atomic.Int64
	stub := providerstub.New(providerstub.Options{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiCalls.Add(1)
		stub.ServeHTTP(w, r)
	}))
	defer api.Close()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fed.Add(1)
		w.Header().Set("X-Hookledger-Result", "accepted")
	}))
	defer rcv.Close()
	stub.Stripe.SetEndpoint(rcv.URL, "whsec_bench")
	stub.Stripe.SetDown(true)
	ctx := context.Background()
	for i := range b.N {
		obj := fmt.Sprintf(`{"id":"in_%06d","object":"invoice","amount_paid":%d,"currency":"usd","customer":"cus_%06d","lines":{"data":[{"amount":%d,"description":"Pro plan"}]}}`, i, 1000+i, i, 1000+i)
		id, _, err := stub.Stripe.Emit(ctx, "invoice.paid", json.RawMessage(obj))
		if err != nil {
			b.Fatal(err)
		}
		if i%10 != 0 {
			if _, _, err := l.Create(ctx, ledger.NewEvent{Key: ledger.Key{Source: "stripe", Tenant: "acme", ID: id}, Type: "invoice.paid"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	p, _ := reconcile.NewStripe(reconcile.StripeOptions{APIKey: "sk_test_stub", BaseURL: api.URL, All: true})
	r := &reconcile.Reconciler{Ledger: l, Feeder: &reconcile.HTTPFeeder{Webhook: rcv.URL}, Log: quiet()}
	job := reconcile.Job{Source: "stripe", Tenant: "acme", Provider: p, Verifier: v, Secrets: []string{"whsec_bench"}, Window: time.Hour, Retention: 168 * time.Hour}
	m.Reset()
	apiCalls.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := r.Run(ctx, job)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Seen != b.N || rep.Missing != (b.N+9)/10 || rep.Fed != rep.Missing || int(fed.Load()) != rep.Missing {
		b.Fatalf("%+v, fed %d", rep.Counts, fed.Load())
	}
	b.ReportMetric(float64(m.Service("DynamoDB"))/float64(b.N), "ddb-req/event")
	b.ReportMetric(float64(apiCalls.Load())/float64(b.N), "api-req/event")
}

// BenchmarkReconcileGitHub is BenchmarkReconcileStripe for a GitHub hook:
// the list carries no payloads, so each missing event costs one more API
// request (GET .../deliveries/{id}) to rebuild it.
func BenchmarkReconcileGitHub(b *testing.B) {
	m := awstest.NewMeter()
	cfg := awstest.Config(b, m.APIOption)
	table := awstest.Table(b, cfg)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table})
	if err != nil {
		b.Fatal(err)
	}
	var apiCalls, fed atomic.Int64
	stub := providerstub.New(providerstub.Options{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiCalls.Add(1)
		stub.ServeHTTP(w, r)
	}))
	defer api.Close()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fed.Add(1)
		w.Header().Set("X-Hookledger-Result", "accepted")
	}))
	defer rcv.Close()
	stub.GitHub.SetEndpoint(rcv.URL, "gh_bench")
	stub.GitHub.SetDown(true)
	ctx := context.Background()
	for i := range b.N {
		guid, _, err := stub.GitHub.Emit(ctx, "push", json.RawMessage(fmt.Sprintf(`{"ref":"refs/heads/main","after":"%040x","commits":[{"message":"change %d"}]}`, i, i)))
		if err != nil {
			b.Fatal(err)
		}
		if i%10 != 0 {
			if _, _, err := l.Create(ctx, ledger.NewEvent{Key: ledger.Key{Source: "github", Tenant: "acme", ID: guid}, Type: "push"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	v, _ := webhook.New(webhook.Config{Provider: "github"})
	p, _ := reconcile.NewGitHub(reconcile.GitHubOptions{Token: "ghp_stub", Hook: "repos/acme/shop/hooks/42", BaseURL: api.URL})
	r := &reconcile.Reconciler{Ledger: l, Feeder: &reconcile.HTTPFeeder{Webhook: rcv.URL}, Log: quiet()}
	job := reconcile.Job{Source: "github", Tenant: "acme", Provider: p, Verifier: v, Secrets: []string{"gh_bench"}, Window: time.Hour, Retention: 168 * time.Hour}
	m.Reset()
	apiCalls.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := r.Run(ctx, job)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Seen != b.N || rep.Missing != (b.N+9)/10 || rep.Fed != rep.Missing || int(fed.Load()) != rep.Missing {
		b.Fatalf("%+v, fed %d", rep.Counts, fed.Load())
	}
	b.ReportMetric(float64(m.Service("DynamoDB"))/float64(b.N), "ddb-req/event")
	b.ReportMetric(float64(apiCalls.Load())/float64(b.N), "api-req/event")
}
