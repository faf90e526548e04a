package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/local"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/lab/effect"
	"github.com/hookledger/hookledger/lab/paystub"
	"github.com/hookledger/hookledger/lab/providerstub"
	"github.com/hookledger/hookledger/ledger"
)

const outageHelp = `Shows an outage healed by hookledger reconcile. The pipeline (the handlers of
hookledger dev, with the shipped invoice effect charging through the payments
stub) runs against the emulator; a Stripe and a GitHub stand-in deliver events
to it while the endpoint is down for a stretch, and while the Stripe endpoint
signs with a secret the receiver no longer has (401). Stripe would give up
after 3 days and GitHub never retries, so those events are lost to the
front door. Then the operator's command runs, as printed:

  hookledger reconcile --source stripe --tenant acme --dry-run
  hookledger reconcile --source stripe --tenant acme
  hookledger reconcile --source github --tenant acme --hook repos/acme/shop/hooks/42

and the payments stub (the oracle) must see every invoice charged exactly
once and every push processed once; a second reconcile must find nothing.
Needs an emulator at AWS_ENDPOINT_URL (default http://localhost:4566); make
outage starts one.
`

func runOutage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hooklab", "outage", "outage [--invoices 40] [--pushes 20] [--hookledger PATH]", stderr)
	invoices := fs.Int("invoices", 40, "Stripe invoice.paid events to send (each must be charged once)")
	pushes := fs.Int("pushes", 20, "GitHub push events to send")
	binary := fs.String("hookledger", "", "the hookledger binary whose reconcile command runs (default: the one next to hooklab)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up if the pipeline has not settled by then")
	keep := fs.Bool("keep", false, "keep the table and queues afterwards")
	synopsis := fs.Usage
	fs.Usage = func() {
		synopsis()
		fmt.Fprint(fs.Output(), "\n"+outageHelp)
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if *invoices < 3 || *pushes < 3 {
		fmt.Fprintln(stderr, "outage: --invoices and --pushes must be at least 3")
		return 2
	}
	if err := cli.CheckDuration(fs, "timeout"); err != nil {
		fmt.Fprintf(stderr, "outage: %v\n", err)
		return 2
	}
	bin, err := operatorBinary(*binary)
	if err != nil {
		fmt.Fprintf(stderr, "outage: %v\n", err)
		return 2
	}
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		os.Setenv("AWS_ENDPOINT_URL", "http://localhost:4566")
	}
	o := &outage{stdout: stdout, stderr: stderr, bin: bin, invoices: *invoices, pushes: *pushes}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := o.run(ctx, *keep); err != nil {
		fmt.Fprintf(stderr, "outage: %v\n", err)
		return 1
	}
	return 0
}

type outage struct {
	stdout, stderr   io.Writer
	bin              string
	invoices, pushes int
	env              []string // for the reconcile child processes
	pay              *paystub.Server
	ledger           *ledger.Ledger
	pushRuns         sync.Map // push key -> *int (runs)
	mu               sync.Mutex
}

func (o *outage) run(ctx context.Context, keep bool) error {
	ep := os.Getenv("AWS_ENDPOINT_URL")
	if err := reachable(ep); err != nil {
		return fmt.Errorf("no AWS emulator answers at %s (%v); run `make outage`, which starts MiniStack, or start one and set AWS_ENDPOINT_URL", ep, err)
	}
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		return err
	}
	name := "hookledger-outage-" + cli.RandomHex(6)
	db := dynamodb.NewFromConfig(cfg)
	sq := sqs.NewFromConfig(cfg)
	if err := ledger.CreateTable(ctx, db, name); err != nil {
		return err
	}
	qurl, dlq, err := queue.CreateQueues(ctx, sq, queue.QueueSpec{Name: name, VisibilityTimeout: 30, MaxReceiveCount: 5})
	if err != nil {
		return err
	}
	if !keep {
		defer func() {
			bg := context.Background()
			db.DeleteTable(bg, &dynamodb.DeleteTableInput{TableName: &name})
			sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &qurl})
			sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &dlq})
		}()
	}

	// The payments stub, the pipeline, the providers' stand-ins.
	o.pay = paystub.New()
	payURL, stopPay, err := serve(o.pay)
	if err != nil {
		return err
	}
	defer stopPay()
	stripeSecret, githubSecret := "whsec_outage_"+cli.RandomHex(16), "gh_outage_"+cli.RandomHex(16)
	sources := fmt.Sprintf(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":[%q]}}},"github":{"provider":"github","tenants":{"acme":{"secrets":[%q]}}}}`, "literal:"+stripeSecret, "literal:"+githubSecret)
	env := map[string]string{"HOOKLEDGER_TABLE": name, "HOOKLEDGER_QUEUE_URL": qurl, "HOOKLEDGER_SOURCES": sources,
		"HOOKLEDGER_RECLAIM_AFTER": "10s", "LOG_LEVEL": "warn"}
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	routes := hookledger.NewRouter()
	if err := effect.Register(routes, hookledger.SettingsMap(map[string]string{"PAYMENTS_URL": payURL, "NOTIFY_URL": payURL})); err != nil {
		return err
	}
	routes.HandleFunc("github", "push", func(_ context.Context, ev *hookledger.Event) error {
		n, _ := o.pushRuns.LoadOrStore(ev.ID, new(int))
		o.mu.Lock()
		*n.(*int)++
		o.mu.Unlock()
		return nil
	})
	if err := os.MkdirAll(".demo", 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(".demo", "outage-pipeline.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	pipe, err := local.New(c, cfg, engine.MustRoutes(routes), func(string) string { return "" }, slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	o.ledger, _ = ledger.New(db, c.LedgerOptions())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	pctx, stopPipe := context.WithCancel(ctx)
	piped := make(chan struct{})
	go func() { pipe.Run(pctx, ln, 2, 20*time.Second, 2*time.Second); close(piped) }()
	defer func() { stopPipe(); <-piped }()
	hooks := "http://" + ln.Addr().String()

	stub := providerstub.New(providerstub.Options{})
	stub.Stripe.EnabledEvents = []string{"invoice.paid"}
	api, stopAPI, err := serve(stub)
	if err != nil {
		return err
	}
	defer stopAPI()
	stub.Stripe.SetEndpoint(hooks+"/webhooks/stripe/acme", stripeSecret)
	stub.GitHub.SetEndpoint(hooks+"/webhooks/github/acme", githubSecret)

	// The outage: the endpoint down for the middle third of the events,
	// and for a few Stripe events a rotated secret the receiver was not
	// told about.
	start := time.Now()
	var invoiceIDs, pushIDs []string
	down := func(i, n int) bool { return i >= n/3 && i < 2*n/3 }
	for i := range o.invoices {
		stub.Stripe.SetDown(down(i, o.invoices))
		secret := stripeSecret
		if i >= 2*o.invoices/3 && i < 2*o.invoices/3+3 {
			secret = "whsec_rotated_but_not_deployed"
		}
		stub.Stripe.SetSecret(secret)
		obj := fmt.Sprintf(`{"id":"in_%04d","object":"invoice","amount_paid":%d,"currency":"usd","customer":"cus_%04d"}`, i, 4900+i, i)
		id, _, err := stub.Stripe.Emit(ctx, "invoice.paid", json.RawMessage(obj))
		if err != nil {
			return err
		}
		invoiceIDs = append(invoiceIDs, id)
	}
	stub.Stripe.SetDown(false)
	stub.Stripe.SetSecret(stripeSecret)
	for i := range o.pushes {
		stub.GitHub.SetDown(down(i, o.pushes))
		guid, _, err := stub.GitHub.Emit(ctx, "push", json.RawMessage(fmt.Sprintf(`{"ref":"refs/heads/main","after":"%040x","pusher":{"name":"dev%d"}}`, i, i)))
		if err != nil {
			return err
		}
		pushIDs = append(pushIDs, guid)
	}
	stub.GitHub.SetDown(false)
	lostInvoices, lostPushes := len(stub.Stripe.Undelivered()), len(stub.GitHub.Failed())
	fmt.Fprintf(o.stdout, "hookledger outage demo\n\n%d Stripe invoices and %d GitHub pushes sent; the endpoint was down for a third of them,\nand 3 invoices were signed with a secret the receiver did not have (answered 401):\n", o.invoices, o.pushes)
	fmt.Fprintf(o.stdout, "%6d  invoices the sender could not deliver (Stripe gives up after 3 days)\n%6d  pushes the sender could not deliver (GitHub never retries)\n\n", lostInvoices, lostPushes)
	if err := o.settle(ctx, invoiceIDs[:0], nil, o.invoices-lostInvoices, o.pushes-lostPushes); err != nil {
		return err
	}
	fmt.Fprintf(o.stdout, "before reconcile: %d of %d invoices charged, %d of %d pushes processed\n\n", o.pay.Stats().Charges, o.invoices, o.pushesDone(), o.pushes)

	o.env = append(os.Environ(), "HOOKLEDGER_TABLE="+name, "HOOKLEDGER_SOURCES="+sources, "LOG_LEVEL=warn")
	common := []string{"--api-url", api, "--min-age", "0s"}
	stripeArgs := append([]string{"reconcile", "--source", "stripe", "--tenant", "acme", "--credential", "literal:sk_test_stub"}, common...)
	githubArgs := append([]string{"reconcile", "--source", "github", "--tenant", "acme", "--credential", "literal:ghp_stub", "--hook", "repos/acme/shop/hooks/42"}, common...)
	feed := []string{"--url", hooks + "/webhooks/{source}/{tenant}"}
	if _, err := o.cli(ctx, append(stripeArgs, "--dry-run"), true); err != nil {
		return err
	}
	if _, err := o.cli(ctx, append(stripeArgs, feed...), true); err != nil {
		return err
	}
	if _, err := o.cli(ctx, append(githubArgs, feed...), true); err != nil {
		return err
	}
	if err := o.settle(ctx, invoiceIDs, pushIDs, o.invoices, o.pushes); err != nil {
		return err
	}
	// Run both again: nothing may be missing.
	var second []reconcile.Report
	for _, args := range [][]string{stripeArgs, githubArgs} {
		out, err := o.cli(ctx, append(append(args, feed...), "--json"), false)
		if err != nil {
			return err
		}
		var rep reconcile.Report
		if err := json.Unmarshal(out, &rep); err != nil {
			return fmt.Errorf("second reconcile: %v", err)
		}
		second = append(second, rep)
	}
	return o.report(invoiceIDs, pushIDs, second, time.Since(start))
}

// serve serves h on a loopback port and returns its URL.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// cli runs the hookledger binary, echoing the command and, if show, its
// output.
func (o *outage) cli(ctx context.Context, args []string, show bool) ([]byte, error) {
	var shown []string
	for _, a := range args {
		if strings.ContainsAny(a, "{} ") {
			a = "'" + a + "'"
		}
		shown = append(shown, a)
	}
	if show {
		fmt.Fprintf(o.stdout, "$ hookledger %s\n", strings.Join(shown, " "))
	}
	cmd := exec.CommandContext(ctx, o.bin, args...)
	cmd.Env = o.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if show {
		o.stdout.Write(out.Bytes())
		fmt.Fprintln(o.stdout)
	}
	if err != nil {
		return nil, fmt.Errorf("hookledger %s: %v\n%s%s", args[0], err, out.String(), errb.String())
	}
	return out.Bytes(), nil
}

func (o *outage) pushesDone() int {
	n := 0
	o.pushRuns.Range(func(_, _ any) bool { n++; return true })
	return n
}

// settle waits until the payments stub saw charges for wantCharges invoices
// and the push handler ran for wantPushes pushes, and every listed event's
// record is done.
func (o *outage) settle(ctx context.Context, invoiceIDs, pushIDs []string, wantCharges, wantPushes int) error {
	for {
		done := len(o.pay.Stats().PerEvent) >= wantCharges && o.pushesDone() >= wantPushes
		if done {
			for _, ids := range []struct {
				source string
				keys   []string
			}{{"stripe", invoiceIDs}, {"github", pushIDs}} {
				for _, k := range ids.keys {
					rec, err := o.ledger.Get(ctx, ledger.Key{Source: ids.source, Tenant: "acme", ID: k})
					if err != nil || rec.Status != ledger.Done {
						done = false
					}
				}
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the pipeline did not settle: %d invoices charged (want %d), %d pushes processed (want %d)",
				len(o.pay.Stats().PerEvent), wantCharges, o.pushesDone(), wantPushes)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// report prints the oracle's verdict.
func (o *outage) report(invoiceIDs, pushIDs []string, second []reconcile.Report, took time.Duration) error {
	st := o.pay.Stats()
	once, twice, never := 0, 0, 0
	for _, id := range invoiceIDs {
		switch n := st.PerEvent[id]; {
		case n == 1:
			once++
		case n > 1:
			twice++
		default:
			never++
		}
	}
	pushOnce, pushOther := 0, 0
	for _, id := range pushIDs {
		n := 0
		if v, ok := o.pushRuns.Load(id); ok {
			o.mu.Lock()
			n = *v.(*int)
			o.mu.Unlock()
		}
		if n == 1 {
			pushOnce++
		} else {
			pushOther++
		}
	}
	rows := []struct {
		n    int
		what string
	}{
		{once, "invoices charged exactly once"},
		{twice, "invoices charged twice or more"},
		{never, "invoices never charged"},
		{st.Notifications, "notifications sent"},
		{pushOnce, "pushes processed exactly once"},
		{pushOther, "pushes processed never or twice"},
		{second[0].Missing, "missing at a second reconcile of stripe"},
		{second[1].Missing, "missing at a second reconcile of github"},
	}
	fmt.Fprintln(o.stdout, "after reconcile (the payments stub and the push handler count):")
	for _, r := range rows {
		fmt.Fprintf(o.stdout, "%6d  %s\n", r.n, r.what)
	}
	fmt.Fprintf(o.stdout, "%6.1f  seconds\n", took.Seconds())
	if once != len(invoiceIDs) || st.Notifications != len(invoiceIDs) || pushOnce != len(pushIDs) || second[0].Missing != 0 || second[1].Missing != 0 {
		fmt.Fprintln(o.stdout, "FAIL")
		return errors.New("the outage was not healed exactly once")
	}
	fmt.Fprintln(o.stdout, "PASS: every event the senders gave up on was recovered and processed exactly once; a second reconcile finds nothing")
	return nil
}
