package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/engine"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/local"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/lab/providerstub"
	"github.com/hookledger/hookledger/ledger"
)

const (
	stripeSecret = "whsec_reconcile_test"
	githubSecret = "gh_reconcile_test"
)

// processed counts how often the processor ran the handler for each event.
type processed struct {
	mu     sync.Mutex
	runs   map[string]int
	bodies map[string][]byte
}

func (p *processed) handle(_ context.Context, ev *hookledger.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := ev.Source + "/" + ev.ID
	p.runs[k]++
	p.bodies[k] = append([]byte(nil), ev.Body...)
	return nil
}

func (p *processed) count(source, key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs[source+"/"+key]
}

// outage is the whole pipeline (the receiver, processor and reclaimer
// handlers of hookledger dev) on a fresh table and queue in the emulator,
// a provider stub that delivers to it, and reconcile's configuration.
type outage struct {
	url    string // the pipeline's webhook base URL
	pipe   *local.Pipeline
	runs   *processed
	ledger *ledger.Ledger
	stub   *providerstub.Server
	api    string // the stub's API base URL
	rc     *reconcile.Config
}

func setupOutage(t *testing.T) *outage {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{VisibilityTimeout: 30})
	sources := fmt.Sprintf(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":[%q]}}},
		"github":{"provider":"github","tenants":{"acme":{"secrets":[%q]}}}}`, "literal:"+stripeSecret, "literal:"+githubSecret)
	c, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c.Table, c.QueueURL, c.SourcesJSON, c.ReclaimAfter, c.LogLevel = table, qurl, sources, 5*time.Second, "warn"
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runs := &processed{runs: map[string]int{}, bodies: map[string][]byte{}}
	routes := hookledger.NewRouter()
	routes.HandleFunc("stripe", hookledger.Any, runs.handle)
	routes.HandleFunc("github", hookledger.Any, runs.handle)
	pipe, err := local.New(c, cfg, engine.MustRoutes(routes), func(string) string { return "" }, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { pipe.Run(ctx, ln, 2, 20*time.Second, time.Second); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	stub := providerstub.New(providerstub.Options{})
	stub.Stripe.EnabledEvents = []string{"invoice.paid"}
	api := httptest.NewServer(stub)
	t.Cleanup(api.Close)
	url := "http://" + ln.Addr().String()
	stub.Stripe.SetEndpoint(url+"/webhooks/stripe/acme", stripeSecret)
	stub.GitHub.SetEndpoint(url+"/webhooks/github/acme", githubSecret)

	rc, l, err := reconcile.NewConfig(c, cfg, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return &outage{url: url, pipe: pipe, runs: runs, ledger: l, stub: stub, api: api.URL, rc: rc}
}

// job builds a reconcile job against the stub.
func (o *outage) job(t *testing.T, spec reconcile.Spec, dry bool) reconcile.Job {
	t.Helper()
	spec.APIURL, spec.MinAge = o.api, "0s"
	if spec.Credential == "" {
		spec.Credential = map[string]string{"stripe": "literal:sk_test_stub", "github": "literal:ghp_stub"}[spec.Source]
	}
	j, err := o.rc.Job(t.Context(), spec, dry)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// settle waits until every key of source has been processed and its record
// is done.
func (o *outage) settle(t *testing.T, source string, keys []string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, k := range keys {
		for {
			rec, err := o.ledger.Get(t.Context(), ledger.Key{Source: source, Tenant: "acme", ID: k})
			if err == nil && rec.Status == ledger.Done && o.runs.count(source, k) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s not processed within 60 s (record %+v, err %v)", source, k, rec, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// once checks that each key was processed exactly once.
func (o *outage) once(t *testing.T, source string, keys []string) {
	t.Helper()
	for _, k := range keys {
		if n := o.runs.count(source, k); n != 1 {
			t.Errorf("%s/%s processed %d times, want exactly once", source, k, n)
		}
	}
}

func TestReconcileHealsStripeOutage(t *testing.T) {
	t.Parallel()
	o := setupOutage(t)
	ctx := t.Context()
	r := &reconcile.Reconciler{Ledger: o.ledger, Feeder: &reconcile.HTTPFeeder{Webhook: o.url + "/webhooks/{source}/{tenant}"}, Backoff: 50 * time.Millisecond}

	// 24 invoices; the endpoint is down for 8 of them and signs with a wrong
	// secret (401) for 3; 2 events of a type the endpoint does not subscribe to.
	var all, delivered, lost []string
	for i := range 24 {
		o.stub.Stripe.SetDown(i >= 6 && i < 14)
		secret := stripeSecret
		if i >= 14 && i < 17 {
			secret = "whsec_rotated_elsewhere"
		}
		o.stub.Stripe.SetSecret(secret)
		id, ok, err := o.stub.Stripe.Emit(ctx, "invoice.paid", json.RawMessage(fmt.Sprintf(`{"id":"in_%02d","object":"invoice","amount_paid":%d}`, i, 4900+i)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
		if ok {
			delivered = append(delivered, id)
		} else {
			lost = append(lost, id)
		}
	}
	o.stub.Stripe.SetDown(false)
	o.stub.Stripe.SetSecret(stripeSecret)
	for range 2 {
		o.stub.Stripe.Emit(ctx, "customer.created", json.RawMessage(`{"id":"cus_1","object":"customer"}`))
	}
	if len(lost) != 11 {
		t.Fatalf("%d deliveries lost, want 11", len(lost))
	}
	o.settle(t, "stripe", delivered)

	// A dry run lists the 11 and changes nothing.
	rep, err := r.Run(ctx, o.job(t, reconcile.Spec{Source: "stripe", Tenant: "acme"}, true))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seen != 11 || rep.Missing != 11 || rep.Fed != 0 || rep.InLedger != 0 || len(rep.Found) != 11 || rep.Found[0].Result != "dry_run" {
		t.Fatalf("dry run: %+v", rep.Counts)
	}
	for _, id := range lost {
		if ok, _ := o.ledger.Exists(ctx, ledger.Key{Source: "stripe", Tenant: "acme", ID: id}); ok {
			t.Fatalf("dry run wrote %s", id)
		}
	}
	// Every event in the window, without the endpoint's types, also finds the
	// two customer.created events the endpoint never subscribed to: hence
	// types with all.
	rep, _ = r.Run(ctx, o.job(t, reconcile.Spec{Source: "stripe", Tenant: "acme", All: true}, true))
	if rep.Seen != 26 || rep.Missing != 13 {
		t.Fatalf("all, no types: %+v", rep.Counts)
	}
	rep, _ = r.Run(ctx, o.job(t, reconcile.Spec{Source: "stripe", Tenant: "acme", All: true, Types: []string{"invoice.*"}}, true))
	if rep.Seen != 24 || rep.Missing != 11 || rep.InLedger != 13 {
		t.Fatalf("all, invoice.*: %+v", rep.Counts)
	}

	// Reconcile, while Stripe's own retries of the same events race it.
	var wg sync.WaitGroup
	wg.Go(func() { o.stub.Stripe.Retry(ctx) })
	rep, err = r.Run(ctx, o.job(t, reconcile.Spec{Source: "stripe", Tenant: "acme"}, false))
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Missing+rep.InLedger != 11 || rep.Fed+rep.Duplicate != rep.Missing || rep.Failed != 0 {
		t.Fatalf("reconcile: %+v %+v", rep.Counts, rep.Found)
	}
	o.settle(t, "stripe", all)
	o.once(t, "stripe", all)
	// The body processed is the event as the API rendered it.
	var ev struct {
		ID   string
		Type string
		Data struct {
			Object struct {
				AmountPaid int `json:"amount_paid"`
			}
		}
	}
	o.runs.mu.Lock()
	json.Unmarshal(o.runs.bodies["stripe/"+lost[0]], &ev)
	o.runs.mu.Unlock()
	if ev.ID != lost[0] || ev.Type != "invoice.paid" || ev.Data.Object.AmountPaid != 4906 {
		t.Fatalf("processed body %+v", ev)
	}

	// A second run finds nothing missing (Stripe still lists them as
	// undelivered if its retry lost the race: they are in the ledger).
	rep, err = r.Run(ctx, o.job(t, reconcile.Spec{Source: "stripe", Tenant: "acme"}, false))
	if err != nil || rep.Missing != 0 || rep.Fed != 0 {
		t.Fatalf("second run: %+v %v", rep.Counts, err)
	}
	// Late retries by the sender change nothing either.
	o.stub.Stripe.Retry(ctx)
	time.Sleep(time.Second)
	o.once(t, "stripe", all)
}

// invokeReceiver is the Lambda service for LambdaFeeder in this test: it
// hands the payload to the pipeline's real receiver handler, as Lambda
// would hand it to the receiver function.
type invokeReceiver struct {
	pipe  *local.Pipeline
	calls int
	mu    sync.Mutex
}

func (i *invokeReceiver) Invoke(ctx context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	i.mu.Lock()
	i.calls++
	i.mu.Unlock()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(in.Payload, &ev); err != nil {
		return nil, err
	}
	resp, _ := i.pipe.Receiver.Handle(ctx, ev)
	b, _ := json.Marshal(resp)
	return &lambda.InvokeOutput{StatusCode: 200, Payload: b}, nil
}

func TestReconcileHealsGitHubOutage(t *testing.T) {
	t.Parallel()
	o := setupOutage(t)
	ctx := t.Context()
	inv := &invokeReceiver{pipe: o.pipe}
	r := &reconcile.Reconciler{Ledger: o.ledger, Feeder: &reconcile.LambdaFeeder{API: inv, Function: "stack-receiver"}}

	var all, lost []string
	for i := range 130 { // two pages of deliveries
		o.stub.GitHub.SetDown(i%10 == 3)
		guid, ok, err := o.stub.GitHub.Emit(ctx, "push", json.RawMessage(fmt.Sprintf(`{"ref":"refs/heads/main","after":"%040d","n":%d}`, i, i)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, guid)
		if !ok {
			lost = append(lost, guid)
		}
	}
	o.stub.GitHub.SetDown(false)
	if len(lost) != 13 {
		t.Fatalf("%d lost", len(lost))
	}
	spec := reconcile.Spec{Source: "github", Tenant: "acme", Hook: "repos/acme/shop/hooks/42"}
	rep, err := r.Run(ctx, o.job(t, spec, false))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seen != 130 || rep.Missing != 13 || rep.Fed != 13 || rep.Failed != 0 || inv.calls != 13 {
		t.Fatalf("reconcile: %+v, %d invokes; %+v", rep.Counts, inv.calls, rep.Found)
	}
	o.settle(t, "github", all)
	o.once(t, "github", all)
	var body struct{ N int }
	o.runs.mu.Lock()
	json.Unmarshal(o.runs.bodies["github/"+lost[0]], &body)
	o.runs.mu.Unlock()
	if body.N != 3 {
		t.Fatalf("processed body n=%d, want 3", body.N)
	}
	rep, err = r.Run(ctx, o.job(t, spec, false))
	if err != nil || rep.Seen != 130 || rep.Missing != 0 || rep.InLedger != 130 {
		t.Fatalf("second run: %+v %v", rep.Counts, err)
	}
}

func TestReconcileGitHubRedelivery(t *testing.T) {
	t.Parallel()
	o := setupOutage(t)
	ctx := t.Context()
	r := &reconcile.Reconciler{Ledger: o.ledger} // no feeder: GitHub delivers itself

	var all, lost []string
	for i := range 12 {
		o.stub.GitHub.SetDown(i%3 == 0)
		guid, ok, _ := o.stub.GitHub.Emit(ctx, "issues", json.RawMessage(fmt.Sprintf(`{"action":"opened","issue":{"number":%d}}`, i)))
		all = append(all, guid)
		if !ok {
			lost = append(lost, guid)
		}
	}
	o.stub.GitHub.SetDown(false)
	spec := reconcile.Spec{Source: "github", Tenant: "acme", Hook: "repos/acme/shop/hooks/42", Redeliver: true}
	rep, err := r.Run(ctx, o.job(t, spec, false))
	if err != nil || rep.Missing != 4 || rep.Requested != 4 || rep.Failed != 0 || len(rep.Found) != len(lost) {
		t.Fatalf("reconcile: %+v %v", rep.Counts, err)
	}
	for _, f := range rep.Found {
		if !slices.Contains(lost, f.Key) || f.Result != "redelivery_requested" {
			t.Errorf("found %+v, not one of the lost %v", f, lost)
		}
	}
	o.settle(t, "github", all)
	o.once(t, "github", all)
	rep, err = r.Run(ctx, o.job(t, spec, false))
	if err != nil || rep.Seen != 12 || rep.Missing != 0 || rep.TooOld != 0 {
		t.Fatalf("second run: %+v %v", rep.Counts, err)
	}
}
