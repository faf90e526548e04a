package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hookledger/hookledger/internal/inject"

	"github.com/hookledger/hookledger/internal/cli"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/lab/crash"
	"github.com/hookledger/hookledger/lab/paystub"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hooklab", "demo", "demo [--events 40] [--dup-rate 0.3] [--burst 50] [--crash step.charge.ran:3,step.notify.ran:7]", stderr)
	nEvents := fs.Int("events", 40, "unique invoice.paid events to send (each charges once)")
	dupRate := fs.Float64("dup-rate", 0.3, "share of events delivered again in sequence (1-2 extra deliveries)")
	burst := fs.Int("burst", 50, "concurrent deliveries of one event")
	crashSpec := fs.String("crash", defaultCrash, "crash points NAME[:N],... each killing the pipeline process once, at its N-th hit (step.NAME.ran: right after a step's effect, before it is recorded)")
	timeout := fs.Duration("timeout", 3*time.Minute, "give up if the pipeline has not settled by then")
	logDir := fs.String("log-dir", ".demo", "directory for the pipeline's logs")
	keep := fs.Bool("keep", false, "keep the demo's table and queues afterwards")
	target := fs.String("target", "dev", "dev: run the handlers in `hooklab dev` child processes; stack: drive a deployed stack (make demo deploys one into MiniStack and sets the flags below)")
	webhookURL := fs.String("webhook-url", os.Getenv("HOOKLEDGER_E2E_WEBHOOK_URL"), "stack: the stack's WebhookUrl output")
	table := fs.String("table", os.Getenv("HOOKLEDGER_E2E_TABLE"), "stack: the stack's ledger table")
	processorFn := fs.String("processor-function", os.Getenv("HOOKLEDGER_E2E_PROCESSOR"), "stack: the processor function's name (the crash is injected into it)")
	paymentsAddr := fs.String("payments-addr", "127.0.0.1:0", "where the payments stub listens (stack: the address the stack's PaymentsUrl points at)")
	stripeSecret := fs.String("stripe-secret", "", "stack: the stripe/acme signing secret in the stack's sources")
	githubSecret := fs.String("github-secret", "", "stack: the github/acme signing secret in the stack's sources")
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if points, err := inject.ParseCrash(*crashSpec); err != nil || len(points) == 0 {
		fmt.Fprintf(stderr, "demo: --crash %q: want NAME[:N],... (e.g. %s)\n", *crashSpec, defaultCrash)
		return 2
	}
	if *nEvents < 1 || *dupRate < 0 || *dupRate > 1 || *burst < 1 {
		fmt.Fprintln(stderr, "demo: --events and --burst must be positive, --dup-rate within 0..1")
		return 2
	}
	if err := cli.CheckDuration(fs, "timeout"); err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 2
	}
	if !inject.Enabled {
		fmt.Fprintln(stderr, "demo: this binary has no crash points; build it with `go build -tags crashpoints -o bin/proof/ ./cmd/hookledger ./lab/cmd/hooklab` (make demo does)")
		return 2
	}
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		os.Setenv("AWS_ENDPOINT_URL", "http://localhost:4566")
	}
	d := &demo{stdout: stdout, stderr: stderr, events: *nEvents, dupRate: *dupRate, burst: *burst, crash: *crashSpec, logDir: *logDir,
		target: *target, table: *table, processorFn: *processorFn, paymentsAddr: *paymentsAddr,
		stripeSecret: *stripeSecret, githubSecret: *githubSecret}
	switch *target {
	case "dev":
		d.stripeSecret, d.githubSecret = "whsec_demo_"+cli.RandomHex(24), "gh_demo_"+cli.RandomHex(24)
	case "stack":
		base, ok := strings.CutSuffix(*webhookURL, "/webhooks/{source}/{tenant}")
		if !ok || *table == "" || *processorFn == "" || *stripeSecret == "" || *githubSecret == "" {
			fmt.Fprintln(stderr, "demo: --target stack needs --webhook-url (ending in /webhooks/{source}/{tenant}), --table, --processor-function, --stripe-secret and --github-secret; `make demo` deploys a stack and passes them")
			return 2
		}
		d.base = base
	default:
		fmt.Fprintf(stderr, "demo: --target %q: want dev or stack\n", *target)
		return 2
	}
	start := time.Now()
	err := d.run(ctx, *timeout, *keep)
	d.elapsed = time.Since(start)
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		if d.report == nil {
			return 1
		}
	}
	return d.print()
}

type demo struct {
	pipeline       string // dev: the program whose dev command is the pipeline (default: this binary)
	stdout, stderr io.Writer
	events         int
	dupRate        float64
	burst          int
	crash          string
	logDir         string
	giveUp         context.CancelCauseFunc // stops the demo when the pipeline keeps failing
	target         string
	table          string
	processorFn    string
	paymentsAddr   string
	stripeSecret   string
	githubSecret   string
	base           string // scheme://host[/stage] the webhook paths go under
	crashMark      string // the base of the mark files the crashing processes leave

	ledger  *ledger.Ledger
	stub    *paystub.Server
	addr    string
	elapsed time.Duration

	deliveries atomic.Int32 // POSTs answered by the receiver
	refused    atomic.Int32 // POSTs that found the pipeline down or got 5xx and were retried
	lastErr    atomic.Value // the last transport error, for the message when nothing got through
	results    sync.Map     // result header -> *atomic.Int32
	report     *demoReport
}

// defaultCrash kills the pipeline right after the third charge and right
// after the seventh notification, each before the ledger recorded it.
const defaultCrash = "step.charge.ran:3,step.notify.ran:7"

type demoReport struct {
	unique, charged, twice, never       int
	notified, notifiedTwice, unnotified int
	chargeAfterRecord                   int // charge requests made after the charge step was recorded done
	indeterminate                       int // events dead as "indeterminate step ..."
	states                              map[ledger.Status]int
	stats                               paystub.Stats
	lateOK                              bool
}

func (d *demo) run(ctx context.Context, timeout time.Duration, keep bool) (err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The supervisor gives up on a pipeline that keeps failing to start;
	// the demo then stops with its error rather than a bare cancellation.
	ctx, d.giveUp = context.WithCancelCause(ctx)
	defer d.giveUp(nil)
	defer func() {
		if cause := context.Cause(ctx); err != nil && errors.Is(cause, errPipelineDown) {
			err = cause
		}
	}()
	ep := os.Getenv("AWS_ENDPOINT_URL")
	if err := reachable(ep); err != nil {
		return fmt.Errorf("no AWS emulator answers at %s (%v); run `make demo`, which starts MiniStack, or start one and set AWS_ENDPOINT_URL", ep, err)
	}
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		return err
	}
	d.stub = paystub.New()
	payLn, err := net.Listen("tcp", d.paymentsAddr)
	if err != nil {
		return fmt.Errorf("payments stub: %w", err)
	}
	paySrv := &http.Server{Handler: d.stub, ReadHeaderTimeout: 5 * time.Second}
	go paySrv.Serve(payLn)
	defer paySrv.Close()
	if err := os.MkdirAll(d.logDir, 0o755); err != nil {
		return err
	}
	if d.crashMark, err = filepath.Abs(filepath.Join(d.logDir, "crash-"+cli.RandomHex(6))); err != nil {
		return err
	}
	if d.target == "stack" {
		stop, err := d.setupStack(ctx, cfg)
		if err != nil {
			return err
		}
		defer stop()
	} else {
		stop, err := d.setupDev(ctx, cfg, "http://"+payLn.Addr().String(), keep)
		if err != nil {
			return err
		}
		defer stop()
	}

	stripeV, _ := webhook.New(webhook.Config{Provider: "stripe"})
	githubV, _ := webhook.New(webhook.Config{Provider: "github"})
	type delivery struct {
		url  string
		hdr  http.Header
		body []byte
		n    int // sequential deliveries
		conc int // concurrent copies per delivery
	}
	var plan []delivery
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for i := range d.events {
		body := cli.SampleInvoice(fmt.Sprintf("evt_demo_%03d_%s", i, cli.RandomHex(6)), 4900+i)
		u := d.base + "/webhooks/stripe/acme"
		hdr, err := stripeV.Sign(webhook.Message{Body: body, URL: u, Now: time.Now()}, d.stripeSecret)
		if err != nil {
			return err
		}
		dl := delivery{url: u, hdr: hdr, body: body, n: 1, conc: 1}
		if rng.Float64() < d.dupRate {
			dl.n += 1 + rng.IntN(2)
		}
		if i == 0 {
			dl.conc = d.burst
		}
		plan = append(plan, dl)
	}
	for i := range 5 { // a second provider whose events have no effect
		body := fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%s"}`, cli.RandomHex(40))
		u := d.base + "/webhooks/github/acme"
		hdr, _ := githubV.Sign(webhook.Message{ID: fmt.Sprintf("gh-delivery-%d-%s", i, cli.RandomHex(8)), Type: "push", Body: body, URL: u}, d.githubSecret)
		plan = append(plan, delivery{url: u, hdr: hdr, body: body, n: 2, conc: 1})
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })

	client := &http.Client{Timeout: 10 * time.Second, Transport: cli.LocalhostTransport()}
	work := make(chan delivery)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for dl := range work {
				for range dl.n {
					var bwg sync.WaitGroup
					for range dl.conc {
						bwg.Go(func() { d.deliver(ctx, client, dl.url, dl.hdr, dl.body) })
					}
					bwg.Wait()
				}
			}
		})
	}
	for _, dl := range plan {
		work <- dl
	}
	close(work)
	wg.Wait()
	if d.deliveries.Load() == 0 {
		return fmt.Errorf("no delivery reached the receiver at %s (last error: %v)", d.base, d.lastErr.Load())
	}
	fmt.Fprintf(d.stdout, "demo: %d deliveries sent; waiting for the pipeline to settle\n", d.deliveries.Load())

	unique := len(plan)
	if err := d.settle(ctx, unique); err != nil {
		d.report = &demoReport{unique: unique}
		d.fillReport(context.Background())
		return err
	}
	// Late redeliveries of finished events: must be answered duplicate and
	// charge nothing.
	before := d.stub.Stats().Charges
	late := true
	for _, dl := range plan[:5] {
		if res := d.deliver(ctx, client, dl.url, dl.hdr, dl.body); res != "duplicate" {
			late = false
		}
	}
	time.Sleep(500 * time.Millisecond)
	late = late && d.stub.Stats().Charges == before
	d.report = &demoReport{unique: unique, lateOK: late}
	return d.fillReport(ctx)
}

// setupDev creates a table and queues and runs the pipeline as `hookledger
// dev` child processes, restarted after each crash.
func (d *demo) setupDev(ctx context.Context, cfg aws.Config, paymentsURL string, keep bool) (func(), error) {
	name := "hookledger-demo-" + cli.RandomHex(6)
	db, sq := dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	if err := ledger.CreateTable(ctx, db, name); err != nil {
		return nil, err
	}
	// The processor's deadline is 3s, so a lease is about 8s; the visibility
	// timeout stays above it, as the template keeps it above 6x the timeout.
	qurl, dlq, err := queue.CreateQueues(ctx, sq, queue.QueueSpec{Name: name, VisibilityTimeout: 12, MaxReceiveCount: 10})
	if err != nil {
		return nil, err
	}
	cleanup := func() {
		if keep {
			return
		}
		bg := context.Background()
		db.DeleteTable(bg, &dynamodb.DeleteTableInput{TableName: &name})
		sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &qurl})
		sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &dlq})
	}
	if d.ledger, err = ledger.New(db, ledger.Options{Table: name}); err != nil {
		cleanup()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return nil, err
	}
	d.addr = ln.Addr().String()
	d.base = "http://" + d.addr
	ln.Close()
	env := os.Environ()
	env = append(env, "PAYMENTS_URL="+paymentsURL, "NOTIFY_URL="+paymentsURL) // the lab's sample effect's settings
	env = append(env,
		"HOOKLEDGER_TABLE="+name, "HOOKLEDGER_QUEUE_URL="+qurl, "HOOKLEDGER_SOURCES="+d.sourcesJSON(),
		"HOOKLEDGER_RECLAIM_AFTER=6s", "LOG_LEVEL=info",
		"HOOKLEDGER_CRASH="+d.crash, "HOOKLEDGER_CRASH_MARK="+d.crashMark)
	fmt.Fprintf(d.stdout, "demo: table %s, queue %s, payments and notification stub %s, pipeline on %s (logs in %s)\n",
		name, qurl, paymentsURL, d.addr, filepath.Join(d.logDir, "pipeline.log"))
	sup, err := d.supervise(ctx, env)
	if err != nil {
		cleanup()
		return nil, err
	}
	stop := func() { sup.stop(); cleanup() }
	if err := waitHealthy(ctx, "http://"+d.addr+"/healthz"); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// sourcesJSON is the demo's sources configuration.
func (d *demo) sourcesJSON() string {
	b, _ := json.Marshal(map[string]any{
		"stripe": map[string]any{"provider": "stripe", "tenants": map[string]any{"acme": map[string]any{"secrets": []string{"literal:" + d.stripeSecret}}}},
		"github": map[string]any{"provider": "github", "tenants": map[string]any{"acme": map[string]any{"secrets": []string{"literal:" + d.githubSecret}}}},
	})
	return string(b)
}

// setupStack points the demo at a deployed stack and arms the crash: the
// processor function's environment gets HOOKLEDGER_CRASH and a mark file,
// so exactly one of its processes dies at the crash point (the stack must
// be built with -tags crashpoints; make demo does).
func (d *demo) setupStack(ctx context.Context, cfg aws.Config) (func(), error) {
	var err error
	if d.ledger, err = ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: d.table}); err != nil {
		return nil, err
	}
	restore, err := crash.Arm(ctx, lambda.NewFromConfig(cfg), d.processorFn, d.crash, d.crashMark)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.stdout, "demo: deployed stack: webhooks under %s, ledger %s, crash %s armed on %s, payments stub %s\n",
		d.base, d.table, d.crash, d.processorFn, d.paymentsAddr)
	return func() { restore(context.Background()) }, nil
}

// crashCount is how many of the armed crashes happened: each leaves its
// mark file (the dev pipeline and the stack's Lambdas alike).
func (d *demo) crashCount() int { return len(crash.Fired(d.crash, d.crashMark)) }

// crashesArmed is how many crash points the demo armed.
func (d *demo) crashesArmed() int {
	points, _ := inject.ParseCrash(d.crash)
	return len(points)
}

// deliver posts like a real sender: on a refused connection (the pipeline
// crashed) or a 5xx it retries after a pause, as providers do.
func (d *demo) deliver(ctx context.Context, client *http.Client, u string, hdr http.Header, body []byte) string {
	for attempt := 0; attempt < 120 && ctx.Err() == nil; attempt++ {
		status, result, err := cli.Post(ctx, client, u, hdr, body)
		if err == nil && status < 500 {
			d.deliveries.Add(1)
			c, _ := d.results.LoadOrStore(result, new(atomic.Int32))
			c.(*atomic.Int32).Add(1)
			return result
		}
		if err == nil {
			d.deliveries.Add(1)
		} else {
			d.lastErr.Store(err.Error())
		}
		d.refused.Add(1)
		time.Sleep(250 * time.Millisecond)
	}
	return ""
}

func (d *demo) settle(ctx context.Context, unique int) error {
	for {
		counts, err := d.ledger.Counts(ctx)
		if err == nil && counts[ledger.Done]+counts[ledger.Dead] >= unique {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pipeline did not settle in time (ledger: %v)", counts)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (d *demo) fillReport(ctx context.Context) error {
	r := d.report
	counts, err := d.ledger.Counts(ctx)
	if err != nil {
		return err
	}
	r.states = counts
	r.stats = d.stub.Stats()
	recs, err := d.ledger.List(ctx, "", 0)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.Status == ledger.Dead && strings.HasPrefix(rec.LastError, "indeterminate step") {
			r.indeterminate++
		}
		if rec.Source != "stripe" {
			continue
		}
		switch r.stats.PerEvent[rec.ID] {
		case 0:
			r.never++
		case 1:
			r.charged++
		default:
			r.twice++
		}
		switch r.stats.NotifiedEvents[rec.ID] {
		case 0:
			r.unnotified++
		case 1:
			r.notified++
		default:
			r.notifiedTwice++
		}
		// A charge request after the ledger recorded the charge step done
		// would mean the step record was ignored.
		if st, ok := rec.Steps["charge"]; ok && st.Status == ledger.StepDone {
			for _, at := range d.stub.ChargeRequestTimes(engine.DownstreamKey(rec.Source, rec.Tenant, rec.ID, "charge")) {
				// The ledger stores times in milliseconds, and the write that
				// records the step follows its request within the same one.
				if at.UnixMilli() > st.At.UnixMilli() {
					r.chargeAfterRecord++
				}
			}
		}
	}
	return nil
}

func (d *demo) print() int {
	r := d.report
	if r == nil {
		return 1
	}
	count := func(res string) int {
		if c, ok := d.results.Load(res); ok {
			return int(c.(*atomic.Int32).Load())
		}
		return 0
	}
	dups := count("duplicate") + count("duplicate_requeued") + count("duplicate_body_mismatch")
	tw := tabwriter.NewWriter(d.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(d.stdout, "\nhookledger demo (%s)\n", map[string]string{"dev": "handlers in hooklab dev processes", "stack": "the deployed stack's Lambdas"}[d.target])
	row := func(k string, v any) { fmt.Fprintf(tw, "%v\t  %s\n", v, k) }
	row("deliveries answered by the receiver", d.deliveries.Load())
	row("deliveries refused while the pipeline was down (retried by the sender)", d.refused.Load())
	row("unique events", r.unique)
	row("accepted as new", count("accepted"))
	row("duplicates suppressed", dups)
	row("invoices (stripe events that must charge once)", d.events)
	row("charges made", r.stats.Charges)
	row("charge requests answered from an earlier charge (Idempotency-Key replay)", r.stats.Replays)
	row("charge requests made again after the charge step was recorded", r.chargeAfterRecord)
	row("invoices charged exactly once", r.charged)
	row("invoices charged twice or more", r.twice)
	row("invoices never charged", r.never)
	row("notifications sent (an API without idempotency)", r.stats.Notifications)
	row("invoices notified exactly once", r.notified)
	row("invoices notified twice or more", r.notifiedTwice)
	row("invoices never notified", r.unnotified)
	row("events parked as indeterminate (dead, for an operator)", r.indeterminate)
	row("ledger done", r.states[ledger.Done])
	row("ledger dead", r.states[ledger.Dead])
	row("ledger not finished", r.states[ledger.Received]+r.states[ledger.Processing]+r.states[ledger.Failed])
	row("pipeline crashes injected ("+d.crash+")", fmt.Sprintf("%d of %d", d.crashCount(), d.crashesArmed()))
	row("seconds", fmt.Sprintf("%.1f", d.elapsed.Seconds()))
	tw.Flush()
	ok := r.twice == 0 && r.never == 0 && r.charged == d.events && r.notifiedTwice == 0 && r.unnotified == 0 &&
		r.notified == d.events && r.chargeAfterRecord == 0 && r.states[ledger.Done] == r.unique &&
		d.crashCount() == d.crashesArmed() && r.lateOK
	if !r.lateOK {
		fmt.Fprintln(d.stdout, "late redeliveries after completion were not all answered duplicate without a charge")
	}
	if d.crashCount() != d.crashesArmed() {
		fmt.Fprintln(d.stdout, "not every armed crash happened")
	}
	if ok {
		fmt.Fprintln(d.stdout, "PASS: every invoice charged and notified exactly once, every event done, despite duplicates and crashes inside its steps")
		return 0
	}
	fmt.Fprintln(d.stdout, "FAIL: see the rows above and the pipeline log")
	return 1
}

// errPipelineDown: the pipeline kept failing to start.
var errPipelineDown = errors.New("the pipeline keeps failing")

// The supervisor stops restarting a pipeline that exits unexpectedly
// maxFailures times within failureWindow (crash points do not count).
const (
	maxFailures   = 3
	failureWindow = 30 * time.Second
	logTailLines  = 20
)

// supervisor runs `hooklab dev` as a child process and restarts it after
// a crash, like Lambda starting a fresh execution environment.
type supervisor struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool
	done    chan struct{}
}

func (d *demo) supervise(ctx context.Context, env []string) (*supervisor, error) {
	exe := d.pipeline
	if exe == "" {
		self, err := os.Executable() // hooklab dev: the pipeline with the lab's sample effect
		if err != nil {
			return nil, err
		}
		exe = self
	}
	logPath, err := filepath.Abs(filepath.Join(d.logDir, "pipeline.log"))
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s := &supervisor{done: make(chan struct{})}
	start := func() error {
		// Every process gets the same crash points; the mark files make
		// each fire once across restarts, as on the stack's Lambdas.
		cmd := exec.Command(exe, "dev", "--addr", d.addr, "--reclaim-every", "2s", "--function-timeout", "3s")
		cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
		if err := cmd.Start(); err != nil {
			return err
		}
		s.mu.Lock()
		s.cmd = cmd
		s.mu.Unlock()
		return nil
	}
	if err := start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(s.done)
		defer logf.Close()
		var failures []time.Time
		for {
			s.mu.Lock()
			cmd := s.cmd
			s.mu.Unlock()
			err := cmd.Wait()
			s.mu.Lock()
			stopped := s.stopped
			s.mu.Unlock()
			if stopped || ctx.Err() != nil {
				return
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == inject.CrashExitCode {
				fmt.Fprintln(d.stdout, "demo: pipeline crashed at an armed crash point; restarting it")
			} else {
				now := time.Now()
				failures = append(failures, now)
				for len(failures) > 0 && now.Sub(failures[0]) > failureWindow {
					failures = failures[1:]
				}
				if len(failures) >= maxFailures {
					d.pipelineDown(err, logPath)
					return
				}
				fmt.Fprintf(d.stdout, "demo: pipeline exited unexpectedly (%v); restarting it\n", err)
			}
			if err := start(); err != nil {
				fmt.Fprintf(d.stderr, "demo: restart failed: %v\n", err)
				return
			}
		}
	}()
	return s, nil
}

// pipelineDown reports a pipeline that keeps failing, with the end of its
// log, and stops the demo.
func (d *demo) pipelineDown(err error, logPath string) {
	fmt.Fprintf(d.stderr, "demo: the pipeline exited unexpectedly %d times within %v (last: %v); not restarting it.\n", maxFailures, failureWindow, err)
	fmt.Fprintf(d.stderr, "demo: last %d lines of its log %s:\n%s", logTailLines, logPath, tailLines(logPath, logTailLines))
	if d.giveUp != nil {
		d.giveUp(fmt.Errorf("%w (exited %d times within %v; see %s)", errPipelineDown, maxFailures, failureWindow, logPath))
	}
}

// tailLines returns the last n lines of the file at path, each indented and
// ending in a newline, or a line saying why it cannot be read.
func tailLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("  (cannot read it: %v)\n", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString("  " + l + "\n")
	}
	return sb.String()
}

func (s *supervisor) stop() {
	s.mu.Lock()
	s.stopped = true
	cmd := s.cmd
	s.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
	}
}

func reachable(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

func waitHealthy(ctx context.Context, u string) error {
	for i := 0; ; i++ {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if i > 100 {
			return fmt.Errorf("pipeline did not come up at %s; see the pipeline log", u)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
