package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookledger/hookledger/internal/engine"

	"github.com/hookledger/hookledger/internal/metric"

	"github.com/hookledger/hookledger"

	"github.com/hookledger/hookledger/internal/local"

	"github.com/hookledger/hookledger/internal/cli"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

const benchSecret = "whsec_bench_0123456789"

var benchSections = []string{"accounting", "latency", "batching", "cost", "memory", "steps", "eventbridge", "guard", "order", "compare", "coldstart", "throughput", "recovery"}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hooklab", "bench", "bench [--only "+strings.Join(benchSections, ",")+"] [--endpoint URL]", stderr)
	endpoint := fs.String("endpoint", "", "AWS emulator endpoint (default $AWS_ENDPOINT_URL, else http://localhost:4599); must be a loopback address")
	only := fs.String("only", strings.Join(benchSections, ","), "sections to run, comma-separated: "+strings.Join(benchSections, ", "))
	timing := fs.Int("timing-events", 15, "events per payload size timed for the handler durations")
	compareEvents := fs.Int("compare-events", 20, "deliveries per payload size in the side-by-side comparison")
	dupRate := fs.Float64("dup-rate", 0.3, "share of duplicate deliveries in the comparison stream and the cost table's second column")
	memory := fs.Int("memory", 0, "Lambda memory size (MB) the cold starts and the bus door's cost run with (0: template.yaml's; the cost model reads template.yaml's)")
	esmScale := fs.Float64("batching-scale", 1, "scale of the batching section's run lengths (1: 180 s at 0.03 events/s on 12 queues side by side, 120 s at 0.3 on 4, 60 s at 3, 20 s at 10, 10 s at 30)")
	billSamples := fs.Int("cost-samples", 30, "deliveries per body size timed with AWS latencies for the cost model")
	python := fs.String("python", ".venv/bench/bin/python", "Python with aws-lambda-powertools (lab/scripts/bench_tools.sh); empty skips Powertools")
	ptScript := fs.String("powertools-script", "lab/scripts/powertools_bench.py", "the Powertools driver")
	runs := fs.Int("coldstart-runs", 15, "cold starts per function")
	tpEvents := fs.Int("throughput-events", 400, "events sent in the throughput run")
	conc := fs.Int("concurrency", 8, "concurrent senders in the throughput run")
	rec := addRecoveryFlags(fs)
	latencyN := fs.Int("latency-events", 100, "events per path timed with AWS latency injected (latency section)")
	goBench := fs.String("go-bench", "", "print the medians of this `go test -bench -benchmem -count N` output first (lab/scripts/bench.sh passes it)")
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected argument %q; choose sections with --only\n", fs.Arg(0))
		return 2
	}
	if err := benchFlags(fs); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	ep := *endpoint
	if ep == "" {
		ep = os.Getenv("AWS_ENDPOINT_URL")
	}
	if ep == "" {
		ep = "http://localhost:4599"
	}
	if err := benchLoopback(ep); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !contains(benchSections, s) {
			fmt.Fprintf(stderr, "bench: unknown section %q (want %s)\n", s, strings.Join(benchSections, ", "))
			return 2
		}
		want[s] = true
	}
	needsEmu := len(want) > 0
	if needsEmu {
		if err := reachable(ep); err != nil {
			fmt.Fprintf(stderr, "bench: no emulator answers at %s (%v); `make bench` starts one\n", ep, err)
			return 1
		}
	}
	b := &benchRun{ep: ep, out: stdout, log: stderr, timing: *timing, compareN: *compareEvents, dupRate: *dupRate,
		memory: *memory, esmScale: *esmScale, billSamples: *billSamples, python: *python, ptScript: *ptScript, runs: *runs, tpEvents: *tpEvents, conc: *conc, rec: rec, latencyN: *latencyN}
	fmt.Fprintf(stdout, "# hookledger bench\n\nemulator %s · %s/%s · %d CPUs · %s · %s\n", ep, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	failed := false
	if *goBench != "" {
		if err := printGoBench(stdout, *goBench); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			failed = true
		}
	}
	step := func(name string, f func(context.Context) error) {
		if !want[name] && name != "payload policies" || ctx.Err() != nil {
			return
		}
		fmt.Fprintf(stderr, "bench: %s…\n", name)
		if err := f(ctx); err != nil {
			fmt.Fprintf(stderr, "bench: %s: %v\n", name, err)
			failed = true
		}
	}
	step("accounting", b.accounting)
	step("latency", b.latency)
	if want["accounting"] || want["cost"] {
		step("payload policies", b.policyAccounting)
	}
	step("batching", b.batching) // before cost, which prices the batches it measured
	step("cost", b.cost)
	step("memory", b.memorySize)
	step("steps", b.steps)
	step("eventbridge", b.eventbridge)
	step("guard", b.guard)
	step("order", b.order)
	step("compare", b.compare)
	step("coldstart", b.coldstart)
	step("throughput", b.throughput)
	step("recovery", b.recovery)
	if failed {
		return 1
	}
	return 0
}

// benchFlags checks the numeric flags before anything runs: a negative
// count panicked in make, a zero concurrency or consumer count waited out
// the whole deadline, zero tenants divided by zero, and a zero schedule or
// timeout made the recovery section spin or time out at once.
func benchFlags(fs *flag.FlagSet) error {
	return cli.FirstError(
		cli.CheckInt(fs, "timing-events", 1, 0),
		cli.CheckInt(fs, "compare-events", 1, 0),
		cli.CheckFloat(fs, "dup-rate", 0, 1),
		checkMemory(fs),
		cli.CheckFloat(fs, "batching-scale", 0.05, 100),
		cli.CheckInt(fs, "cost-samples", 1, 0),
		cli.CheckInt(fs, "coldstart-runs", 1, 0),
		cli.CheckInt(fs, "throughput-events", 1, 0),
		cli.CheckInt(fs, "concurrency", 1, 1000),
		cli.CheckInt(fs, "latency-events", 1, 0),
		cli.CheckInt(fs, "recovery-records", 1, 0),
		cli.CheckInt(fs, "recovery-account-records", 1, 0),
		cli.CheckInt(fs, "recovery-target", 1, 0),
		cli.CheckDuration(fs, "recovery-timeout"),
		cli.CheckDuration(fs, "recovery-schedule"),
		cli.CheckInt(fs, "recovery-consumers", 1, 0),
		cli.CheckInt(fs, "recovery-tenants", 1, 0),
	)
}

func printGoBench(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	res := bench.ParseGoBench(f)
	if len(res) == 0 {
		return fmt.Errorf("%s has no benchmark results", path)
	}
	t := &bench.MD{Title: "Go micro-benchmarks: the request path without AWS calls (fakes answer at once; medians)",
		Header: []string{"benchmark", "runs", "µs/op", "KB/op", "allocs/op"}}
	for _, r := range res {
		t.Add(strings.TrimPrefix(r.Name, "Benchmark"), len(r.NsOp), bench.Median(r.NsOp)/1000, bench.Median(r.BytesOp)/1024, bench.Median(r.AllocsOp))
	}
	t.Notes = []string{"Receiver: decode, verify, extract the key, build the record and the compressed payload item, encode the queue message, log. " +
		"Processor: decode the message, claim, run a no-op effect, complete, log. Verify: signature and key extraction only. " +
		"Gzip fresh vs pooled sizes what pooling the payload compressor would save."}
	t.Print(w)
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func benchLoopback(ep string) error {
	u, err := url.Parse(ep)
	if err != nil {
		return fmt.Errorf("endpoint %q: %v", ep, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("endpoint %q is not a loopback address; the benchmark never reaches real AWS", ep)
	}
	return nil
}

type benchRun struct {
	ep               string
	out, log         io.Writer
	timing, compareN int
	dupRate          float64
	memory           int
	esmScale         float64
	billSamples      int
	python, ptScript string
	runs             int
	tpEvents, conc   int
	rec              *recoveryFlags
	latencyN         int

	stack *bench.Stack               // template.yaml, as the cost model reads it
	esm   map[esmKey]bench.ESMResult // the batching section's runs
}

// awsConfig is an SDK config for the emulator with extra middleware.
func (b *benchRun) awsConfig(ctx context.Context, opts ...func(*middleware.Stack) error) (aws.Config, error) {
	return awsconfig.LoadDefaultConfig(ctx,
		awsconfig.WithRegion("us-east-1"),
		awsconfig.WithBaseEndpoint(b.ep),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		awsconfig.WithAPIOptions(opts),
	)
}

// benchEnv is the world an accounting or throughput run works in: a fresh
// table and queue, and a Config pointing at them.
type benchEnv struct {
	raw      aws.Config
	table    string
	queueURL string
	dlqURL   string
	conf     config.Config
}

// metered is an AWS configuration for env's emulator whose requests the
// meter counts and whose ledger writes and reads the accountant prices.
func (b *benchRun) metered(ctx context.Context, env *benchEnv) (*awstest.Meter, *units.Accountant, aws.Config, error) {
	m := awstest.NewMeter()
	acc := &units.Accountant{Raw: dynamodb.NewFromConfig(env.raw), Tables: map[string]units.TableSpec{env.table: ledgerTable}}
	cfg, err := b.awsConfig(ctx, m.APIOption, acc.APIOption)
	return m, acc, cfg, err
}

// meteredLedgers is metered with two ledgers on env's table: one through
// the meter and the unit accountant (what is measured), one on the raw
// config (for setting records up unmeasured).
func (b *benchRun) meteredLedgers(ctx context.Context, env *benchEnv) (m *awstest.Meter, acc *units.Accountant, measured, plain *ledger.Ledger, err error) {
	m, acc, cfg, err := b.metered(ctx, env)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if measured, err = ledger.New(dynamodb.NewFromConfig(cfg), env.conf.LedgerOptions()); err != nil {
		return nil, nil, nil, nil, err
	}
	if plain, err = ledger.New(dynamodb.NewFromConfig(env.raw), env.conf.LedgerOptions()); err != nil {
		return nil, nil, nil, nil, err
	}
	return m, acc, measured, plain, nil
}

func (b *benchRun) newEnv(ctx context.Context, name string, reclaimAfter string) (*benchEnv, func(), error) {
	raw, err := b.awsConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	db, sq := dynamodb.NewFromConfig(raw), sqs.NewFromConfig(raw)
	table := "bench-" + name + "-" + cli.RandomHex(6)
	if err := ledger.CreateTable(ctx, db, table); err != nil {
		return nil, nil, err
	}
	q, dlq, err := queue.CreateQueues(ctx, sq, queue.QueueSpec{Name: table, VisibilityTimeout: 30, MaxReceiveCount: 5})
	if err != nil {
		db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table})
		return nil, nil, err
	}
	cleanup := func() {
		bg := context.Background()
		db.DeleteTable(bg, &dynamodb.DeleteTableInput{TableName: &table})
		sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &q})
		sq.DeleteQueue(bg, &sqs.DeleteQueueInput{QueueUrl: &dlq})
	}
	sources := fmt.Sprintf(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":[%q]}}}}`, "literal:"+benchSecret)
	env := map[string]string{"HOOKLEDGER_TABLE": table, "HOOKLEDGER_QUEUE_URL": q, "HOOKLEDGER_SOURCES": sources}
	if reclaimAfter != "" {
		env["HOOKLEDGER_RECLAIM_AFTER"] = reclaimAfter
	}
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return &benchEnv{raw: raw, table: table, queueURL: q, dlqURL: dlq, conf: c}, cleanup, nil
}

// ledgerTable is the ledger table's shape for the unit rules.
var ledgerTable = units.LedgerTable

// logCounter counts the bytes and the processed events the handlers log.
type logCounter struct {
	bytes     atomic.Int64
	processed atomic.Int64
}

func (c *logCounter) Write(p []byte) (int, error) {
	c.bytes.Add(int64(len(p)))
	if bytes.Contains(p, []byte(`"msg":"event"`)) && bytes.Contains(p, []byte(`"outcome":"processed`)) {
		c.processed.Add(int64(bytes.Count(p, []byte(`"msg":"event"`))))
	}
	return len(p), nil
}

func (c *logCounter) take() int64 { return c.bytes.Swap(0) }

// handlers are the three functions' handlers built from one SDK config.
type handlers struct {
	rcv  *receiver.Handler
	proc *processor.Handler
	rec  *reclaimer.Handler
	logs *logCounter
}

func buildHandlers(env *benchEnv, cfg aws.Config) (*handlers, error) {
	logs := &logCounter{}
	log := env.conf.Logger(logs)
	rcv, err := receiver.FromConfig(env.conf, cfg, func(string) string { return "" }, log)
	if err != nil {
		return nil, err
	}
	// A routed effect that does nothing: the processor logs what a real
	// event's success costs, not the warning an unrouted event gets.
	routes := hookledger.NewRouter()
	routes.HandleFunc(hookledger.Any, hookledger.Any, func(context.Context, *hookledger.Event) error { return nil })
	proc, err := processor.FromConfig(env.conf, cfg, engine.MustRoutes(routes), log)
	if err != nil {
		return nil, err
	}
	rec, err := reclaimer.FromConfig(env.conf, cfg, log)
	if err != nil {
		return nil, err
	}
	// In Lambda the handlers' CloudWatch metrics are EMF lines on the same
	// output as their logs, billed as log ingestion: count them as such.
	emf := metric.New(logs, "bench")
	rcv.Metrics, proc.Metrics, rec.Metrics = emf, emf, emf
	return &handlers{rcv: rcv, proc: proc, rec: rec, logs: logs}, nil
}

var stripeVerifier = func() *webhook.Verifier {
	v, err := webhook.New(webhook.Config{Provider: "stripe"})
	if err != nil {
		panic(err)
	}
	return v
}()

// benchRequest is a signed Stripe delivery as API Gateway hands it over.
func benchRequest(body []byte) events.APIGatewayV2HTTPRequest {
	h, err := stripeVerifier.Sign(webhook.Message{Body: body, Now: time.Now()}, benchSecret)
	if err != nil {
		panic(err)
	}
	req := events.APIGatewayV2HTTPRequest{
		RawPath: "/webhooks/stripe/acme", Headers: map[string]string{}, Body: string(body),
		PathParameters: map[string]string{"source": "stripe", "tenant": "acme"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "hooks.example.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/webhooks/stripe/acme"}},
	}
	for k, vs := range h {
		req.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	return req
}

// receive takes one message off the queue (unmetered) as the event source
// mapping would, and deletes it.
func receiveOne(ctx context.Context, sq *sqs.Client, queueURL string) (events.SQSEvent, error) {
	for i := 0; i < 5; i++ {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: 1, WaitTimeSeconds: 1, MessageSystemAttributeNames: esmAttributes})
		if err != nil {
			return events.SQSEvent{}, err
		}
		if len(out.Messages) == 0 {
			continue
		}
		m := out.Messages[0]
		sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: m.ReceiptHandle})
		return events.SQSEvent{Records: []events.SQSMessage{esmMessage(m)}}, nil
	}
	return events.SQSEvent{}, errors.New("no message on the queue")
}

// esmAttributes are the system attributes the event source mapping hands
// the processor; the trace header among them puts trace_id on its lines.
var esmAttributes = []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAWSTraceHeader}

// esmMessage is m as the event source mapping hands it to the processor.
func esmMessage(m sqstypes.Message) events.SQSMessage {
	return events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), ReceiptHandle: aws.ToString(m.ReceiptHandle), Attributes: m.Attributes}
}

// step is one accounted step: its requests by operation and its units.
type benchStep struct {
	calls map[string]int
	u     units.Usage
	logs  int64
}

func (s benchStep) total() int {
	n := 0
	for _, v := range s.calls {
		n += v
	}
	return n
}

func (s benchStep) callList() string {
	ops := make([]string, 0, len(s.calls))
	for k := range s.calls {
		ops = append(ops, k)
	}
	sort.Strings(ops)
	var parts []string
	for _, op := range ops {
		short := strings.NewReplacer("DynamoDB.", "", "SQS.", "").Replace(op)
		if s.calls[op] > 1 {
			short = fmt.Sprintf("%d×%s", s.calls[op], short)
		}
		parts = append(parts, short)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " + ")
}

func (b *benchRun) accounting(ctx context.Context) error {
	env, cleanup, err := b.newEnv(ctx, "acct", "300ms")
	if err != nil {
		return err
	}
	defer cleanup()
	// Every path, re-drives from a stored body included, needs the body in
	// the ledger: this section measures the always policy (the payload
	// section compares the two, and the side-by-side cost the defaults).
	env.conf.Payload = config.PayloadAlways
	m, acc, cfg, err := b.metered(ctx, env)
	if err != nil {
		return err
	}
	h, err := buildHandlers(env, cfg)
	if err != nil {
		return err
	}
	sq := sqs.NewFromConfig(env.raw)
	take := func() benchStep {
		s := benchStep{calls: m.Snapshot(), u: acc.Take(), logs: h.logs.take()}
		m.Reset()
		return s
	}
	expect := func(resp events.APIGatewayV2HTTPResponse, result string) error {
		if got := resp.Headers["X-Hookledger-Result"]; got != result {
			return fmt.Errorf("receiver answered %d %s, want %s", resp.StatusCode, got, result)
		}
		return nil
	}
	process := func() (benchStep, error) {
		batch, err := receiveOne(ctx, sq, env.queueURL)
		if err != nil {
			return benchStep{}, err
		}
		take()
		resp, _ := h.proc.Handle(ctx, batch)
		if len(resp.BatchItemFailures) > 0 {
			return benchStep{}, errors.New("processor reported a failure")
		}
		return take(), nil
	}

	t := &bench.MD{Title: "Request accounting per event, payload policy always (measured against the emulator; units computed from item sizes)",
		Header: []string{"step", "payload", "AWS calls", "calls", "WCU table", "WCU index", "RCU", "SQS billed", "log B"}}
	sizes := &bench.MD{Title: "Stored sizes (realistic JSON invoice events; payload gzip'd when smaller)",
		Header: []string{"payload", "body bytes", "stored payload bytes", "ratio", "record item B", "payload item B", "SQS message B"}}
	var targetLines []string
	for _, size := range testbody.Sizes {
		label := testbody.Label(size)
		// 1. new event
		body := testbody.JSON("evt_acct_new_"+cli.RandomHex(8), size)
		req := benchRequest(body)
		take()
		resp, _ := h.rcv.Handle(ctx, req)
		if err := expect(resp, string(receiver.Accepted)); err != nil {
			return err
		}
		sNew := take()
		// 2. processed
		sProc, err := process()
		if err != nil {
			return err
		}
		// 3. duplicate of a done record
		resp, _ = h.rcv.Handle(ctx, req)
		if err := expect(resp, string(receiver.Duplicate)); err != nil {
			return err
		}
		sDup := take()
		// 4. duplicate of a record still received (the first receiver may have died)
		bodyB := testbody.JSON("evt_acct_recv_"+cli.RandomHex(8), size)
		reqB := benchRequest(bodyB)
		h.rcv.Handle(ctx, reqB)
		take()
		resp, _ = h.rcv.Handle(ctx, reqB)
		if err := expect(resp, string(receiver.Duplicate)); err != nil {
			return err
		}
		sDupRecv := take()
		if _, err := process(); err != nil {
			return err
		}
		// 5. reclaimed: the enqueue was lost; the reclaimer re-drives it
		bodyC := testbody.JSON("evt_acct_lost_"+cli.RandomHex(8), size)
		h.rcv.Handle(ctx, benchRequest(bodyC))
		if _, err := receiveOne(ctx, sq, env.queueURL); err != nil { // the message is "lost"
			return err
		}
		time.Sleep(400 * time.Millisecond) // past HOOKLEDGER_RECLAIM_AFTER
		take()
		rep, err := h.rec.Handle(ctx, nil)
		if err != nil {
			return err
		}
		if rep.Requeued != 1 {
			return fmt.Errorf("reclaimer requeued %d events, want 1 (%+v)", rep.Requeued, rep)
		}
		sReclaim := take()
		sReproc, err := process()
		if err != nil {
			return err
		}
		queries := sReclaim.calls["DynamoDB.Query"]

		t.Add("receiver: new event", label, sNew.callList(), sNew.total(), sNew.u.WCU, sNew.u.IndexWCU, sNew.u.RCU, sNew.u.SQS, sNew.logs)
		t.Add("processor: claim + complete", label, sProc.callList(), sProc.total(), sProc.u.WCU, sProc.u.IndexWCU, sProc.u.RCU, units.SQSRequests(len(msgBody(body)))+1, sProc.logs)
		t.Add("receiver: duplicate (done)", label, sDup.callList(), sDup.total(), sDup.u.WCU, sDup.u.IndexWCU, sDup.u.RCU, sDup.u.SQS, sDup.logs)
		t.Add("receiver: duplicate (still received, <30 s)", label, sDupRecv.callList(), sDupRecv.total(), sDupRecv.u.WCU, sDupRecv.u.IndexWCU, sDupRecv.u.RCU, sDupRecv.u.SQS, sDupRecv.logs)
		t.Add(fmt.Sprintf("reclaimer run re-driving 1 event (incl. %d shard queries and the run lock's 2 writes)", queries), label, sReclaim.callList(), sReclaim.total(), sReclaim.u.WCU, sReclaim.u.IndexWCU, sReclaim.u.RCU, sReclaim.u.SQS, sReclaim.logs)
		t.Add("processor after reclaim", label, sReproc.callList(), sReproc.total(), sReproc.u.WCU, sReproc.u.IndexWCU, sReproc.u.RCU, units.SQSRequests(len(msgBody(bodyC)))+1, sReproc.logs)

		stored := bench.Compressed(body)
		rec, pay := 0, 0
		if len(sNew.u.Written) >= 2 {
			rec, pay = sNew.u.Written[0], sNew.u.Written[1]
		}
		sizes.Add(label, len(body), stored, fmt.Sprintf("%.1f×", float64(len(body))/float64(stored)), rec, pay, len(msgBody(body)))

		check := func(name string, ok bool, got string) {
			mark := "met"
			if !ok {
				mark = "NOT met"
			}
			targetLines = append(targetLines, fmt.Sprintf("- %s, %s: %s (%s)", name, label, mark, got))
		}
		check("new event ≤ 3 calls", sNew.total() <= 3, fmt.Sprintf("%d", sNew.total()))
		check("duplicate 1 call", sDup.total() == 1, fmt.Sprintf("%d", sDup.total()))
		requeueWCU := sReclaim.u.WCU - 2 // the run lock: taken and released once per run, not per event
		statusOK := sProc.u.WCU == 2 && requeueWCU == 1
		check("status change 1 table WCU", statusOK, fmt.Sprintf("claim+complete %s table WCU, requeue %s (+2 per run for the run lock)", bench.Num(sProc.u.WCU), bench.Num(requeueWCU)))
		check("payload written once", sNew.calls["DynamoDB.PutItem"] == 2 && sProc.calls["DynamoDB.PutItem"] == 0, fmt.Sprintf("%d payload write on the new event, 0 after", sNew.calls["DynamoDB.PutItem"]-1))
	}
	t.Notes = []string{
		"WCU index: the sparse KEYS_ONLY due index: an item entering or leaving it costs 1, a changed due_at 2 (delete + put). " +
			"SQS billed: 64 KB chunks; the processor rows count the event source mapping's receive (same chunks as the send) and delete (1), assuming batches of one. " +
			"log B: bytes of the handlers' JSON log lines for the step.",
	}
	t.Print(b.out)
	sizes.Print(b.out)
	fmt.Fprintln(b.out, "\nTargets:")
	for _, l := range targetLines {
		fmt.Fprintln(b.out, l)
	}
	return b.timingPass(ctx, env)
}

// msgBody is the queue message the receiver sends for body.
func msgBody(body []byte) string {
	s, _ := queue.Encode(queue.Message{Source: "stripe", Tenant: "acme", ID: "evt_0123456789abcdefghij", Type: "invoice.paid",
		SHA256: strings.Repeat("0", 64), Body: body, ReceivedAt: time.Now().UnixMilli()})
	return s
}

// timingPass measures the handlers' durations against the emulator with
// only the request meter installed (no accountant reads).
func (b *benchRun) timingPass(ctx context.Context, env *benchEnv) error {
	m := awstest.NewMeter()
	cfg, err := b.awsConfig(ctx, m.APIOption)
	if err != nil {
		return err
	}
	h, err := buildHandlers(env, cfg)
	if err != nil {
		return err
	}
	sq := sqs.NewFromConfig(env.raw)
	t := &bench.MD{Title: fmt.Sprintf("Handler time against the emulator (median of %d; local proxy for Lambda duration)", b.timing),
		Header: []string{"payload", "receiver new ms", "receiver duplicate ms", "processor ms (claim, effect, complete)"}}
	for _, size := range testbody.Sizes {
		var tNew, tDup, tProc []time.Duration
		for i := 0; i < b.timing; i++ {
			req := benchRequest(testbody.JSON("evt_time_"+cli.RandomHex(10), size))
			t0 := time.Now()
			h.rcv.Handle(ctx, req)
			tNew = append(tNew, time.Since(t0))
			batch, err := receiveOne(ctx, sq, env.queueURL)
			if err != nil {
				return err
			}
			t0 = time.Now()
			h.proc.Handle(ctx, batch)
			tProc = append(tProc, time.Since(t0))
			t0 = time.Now()
			h.rcv.Handle(ctx, req)
			tDup = append(tDup, time.Since(t0))
		}
		t.Add(testbody.Label(size), bench.Median(bench.MS(tNew)), bench.Median(bench.MS(tDup)), bench.Median(bench.MS(tProc)))
	}
	t.Notes = []string{"The emulator's own time, no AWS latencies: the cost model uses the cost section's timings, which inject them."}
	t.Print(b.out)
	return nil
}

func usd(f float64) string { return fmt.Sprintf("$%.3f", f) }

// ---------------------------------------------------------------- compare

type benchDelivery struct {
	ID   string `json:"id"`
	Size int    `json:"size"`
	Dup  bool   `json:"dup"`
	Body string `json:"body"`
}

// compareStream is the event stream every contender sees: per size, n
// deliveries of which dupRate repeat an earlier (finished) event.
func compareStream(n int, dupRate float64, prefix string) []benchDelivery {
	var out []benchDelivery
	for _, size := range testbody.Sizes {
		var ids []string
		dups := 0
		for i := 0; i < n; i++ {
			if len(ids) > 0 && float64(dups+1) <= dupRate*float64(i+1) {
				id := ids[(i*7)%len(ids)]
				out = append(out, benchDelivery{ID: id, Size: size, Dup: true, Body: string(testbody.JSON(id, size))})
				dups++
				continue
			}
			id := fmt.Sprintf("evt_%s_%d_%d", prefix, size, i)
			ids = append(ids, id)
			out = append(out, benchDelivery{ID: id, Size: size, Body: string(testbody.JSON(id, size))})
		}
	}
	return out
}

// contenderResult aggregates one contender's deliveries per size and kind.
type contenderResult struct {
	calls, wcu, rcu map[[2]int]float64 // [size, dup]
	n               map[[2]int]int
	ms              map[[2]int][]float64
}

func newContenderResult() *contenderResult {
	return &contenderResult{calls: map[[2]int]float64{}, wcu: map[[2]int]float64{}, rcu: map[[2]int]float64{}, n: map[[2]int]int{}, ms: map[[2]int][]float64{}}
}

func kindKey(size int, dup bool) [2]int {
	if dup {
		return [2]int{size, 1}
	}
	return [2]int{size, 0}
}

func (b *benchRun) compare(ctx context.Context) error {
	raw, err := b.awsConfig(ctx)
	if err != nil {
		return err
	}
	db := dynamodb.NewFromConfig(raw)
	table := "bench-cmp-" + cli.RandomHex(6)
	if err := ledger.CreateTable(ctx, db, table); err != nil {
		return err
	}
	defer db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table})
	m := awstest.NewMeter()
	acc := &units.Accountant{Raw: db, Tables: map[string]units.TableSpec{table: ledgerTable}}
	metered, err := b.awsConfig(ctx, m.APIOption, acc.APIOption)
	if err != nil {
		return err
	}
	timed, err := b.awsConfig(ctx)
	if err != nil {
		return err
	}
	hook := func(cfg aws.Config) *ledger.Ledger {
		l, _ := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table})
		return l
	}
	contenders := []contender{
		{"hookledger ledger", func(ctx context.Context, cfg aws.Config, d benchDelivery) error {
			l := hook(cfg)
			id := ledger.Key{Source: "stripe", Tenant: "acme", ID: d.ID}
			_, created, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"})
			if err != nil || !created {
				return err
			}
			if err := l.PutPayload(ctx, id, []byte(d.Body), "x"); err != nil {
				return err
			}
			lease, err := l.Claim(ctx, id, time.Minute)
			if err != nil {
				return err
			}
			_, err = l.Complete(ctx, lease)
			return err
		}},
		{"naive (payload in the record)", func(ctx context.Context, cfg aws.Config, d benchDelivery) error {
			l := &bench.Naive{DB: dynamodb.NewFromConfig(cfg), Table: table, Shards: 16}
			id := ledger.Key{Source: "stripe", Tenant: "acme", ID: d.ID}
			created, err := l.Create(ctx, id, "invoice.paid", "x", []byte(d.Body))
			if err != nil || !created {
				return err
			}
			tok, err := l.Claim(ctx, id, time.Minute)
			if err != nil {
				return err
			}
			return l.Complete(ctx, id, tok)
		}},
	}
	idem, err := idempotencyContender(table, metered, timed)
	if err != nil {
		return err
	}
	contenders = append(contenders, idem)
	results := map[string]*contenderResult{}
	var names []string
	for ci, c := range contenders {
		r := newContenderResult()
		results[c.name] = r
		names = append(names, c.name)
		// Accounting pass (units need before/after reads) and timing pass
		// (no accountant), each on its own ids.
		for _, d := range compareStream(b.compareN, b.dupRate, fmt.Sprintf("a%d", ci)) {
			m.Reset()
			acc.Take()
			if err := c.run(ctx, metered, d); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			u := acc.Take()
			k := kindKey(d.Size, d.Dup)
			calls := 0
			for _, v := range m.Snapshot() {
				calls += v
			}
			r.calls[k] += float64(calls)
			r.wcu[k] += u.WCU + u.IndexWCU
			r.rcu[k] += u.RCU
			r.n[k]++
		}
		for _, d := range compareStream(b.compareN, b.dupRate, fmt.Sprintf("t%d", ci)) {
			t0 := time.Now()
			if err := c.run(ctx, timed, d); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			k := kindKey(d.Size, d.Dup)
			r.ms[k] = append(r.ms[k], float64(time.Since(t0).Microseconds())/1000)
		}
	}
	ptNote := ""
	if b.python != "" {
		r, version, err := b.powertools(ctx)
		if err != nil {
			ptNote = "Powertools: not run (" + err.Error() + ")."
			fmt.Fprintf(b.log, "bench: powertools: %v\n", err)
		} else {
			name := "Powertools idempotency " + version
			results[name] = r
			names = append(names, name)
		}
	}
	t := &bench.MD{Title: fmt.Sprintf("Side by side: one stream of %d deliveries per size, %.0f%% duplicates, one emulator", b.compareN, b.dupRate*100),
		Header: []string{"contender", "payload", "kind", "deliveries", "requests/delivery", "WCU/delivery", "RCU/delivery", "p50 ms", "p90 ms"}}
	for _, name := range names {
		r := results[name]
		for _, size := range testbody.Sizes {
			for _, dup := range []bool{false, true} {
				k := kindKey(size, dup)
				if r.n[k] == 0 {
					continue
				}
				kind := "new (claim → complete)"
				if dup {
					kind = "duplicate"
				}
				n := float64(r.n[k])
				t.Add(name, testbody.Label(size), kind, r.n[k], r.calls[k]/n, r.wcu[k]/n, r.rcu[k]/n, bench.Median(r.ms[k]), bench.Percentile(r.ms[k], 90))
			}
		}
	}
	t.Notes = []string{
		"hookledger: Create (conditional put) + PutPayload + Claim + Complete, the ledger's whole life of an event without SQS; naive: the same with the payload inside the record item (one put, but every status change is billed on the payload); " +
			"Powertools for AWS Lambda (Python) idempotency with its DynamoDB persistence layer: PutItem INPROGRESS + UpdateItem COMPLETED around the handler. " +
			"Powertools dedupes a synchronous handler (it stores the handler's response, not the payload, and has no queue, lease handover or reclaimer); hookledger and naive store the payload for a queued pipeline. " +
			"Latency: wall time per delivery from the client (Go SDK for the first two, boto3 in CPython for Powertools — language and SDK overheads included), on a shared 2-core machine.",
	}
	t.Notes = append(t.Notes, idemCompareNote)
	if ptNote != "" {
		t.Notes = append(t.Notes, ptNote)
	}
	t.Print(b.out)
	return b.idempotencyTable(ctx, table, results, names)
}

// contender is one implementation in the side-by-side comparison.
type contender struct {
	name string
	run  func(ctx context.Context, cfg aws.Config, d benchDelivery) error
}

// ptOutput is what lab/scripts/powertools_bench.py writes.
type ptOutput struct {
	Version    string `json:"version"`
	Deliveries []struct {
		Size  int            `json:"size"`
		Dup   bool           `json:"dup"`
		Calls map[string]int `json:"calls"`
		Ops   []struct {
			Op         string                     `json:"op"`
			OK         bool                       `json:"ok"`
			Before     map[string]json.RawMessage `json:"before"`
			After      map[string]json.RawMessage `json:"after"`
			Attempted  map[string]json.RawMessage `json:"attempted"`
			Consistent bool                       `json:"consistent"`
		} `json:"ops"`
	} `json:"deliveries"`
	Timing []struct {
		Size int     `json:"size"`
		Dup  bool    `json:"dup"`
		MS   float64 `json:"ms"`
	} `json:"timing"`
}

func (b *benchRun) powertools(ctx context.Context) (*contenderResult, string, error) {
	if _, err := os.Stat(b.python); err != nil {
		return nil, "", fmt.Errorf("%s missing; run lab/scripts/bench_tools.sh", b.python)
	}
	dir, err := os.MkdirTemp("", "hookledger-bench-pt")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	stream := map[string][]benchDelivery{"accounting": compareStream(b.compareN, b.dupRate, "pa"), "timing": compareStream(b.compareN, b.dupRate, "pt")}
	sb, _ := json.Marshal(stream)
	in, out := filepath.Join(dir, "stream.json"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(in, sb, 0o600); err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, b.python, b.ptScript, "--endpoint", b.ep, "--stream", in, "--out", out)
	cmd.Stderr = b.log
	if err := cmd.Run(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", b.ptScript, err)
	}
	ob, err := os.ReadFile(out)
	if err != nil {
		return nil, "", err
	}
	var res ptOutput
	if err := json.Unmarshal(ob, &res); err != nil {
		return nil, "", fmt.Errorf("powertools output: %w", err)
	}
	tbl := units.TableSpec{Keys: []string{"id"}}
	r := newContenderResult()
	for _, d := range res.Deliveries {
		k := kindKey(d.Size, d.Dup)
		for _, v := range d.Calls {
			r.calls[k] += float64(v)
		}
		for _, op := range d.Ops {
			before, after, attempted := avMap(op.Before), avMap(op.After), avMap(op.Attempted)
			switch {
			case op.Op == "GetItem":
				r.rcu[k] += units.ReadUnits(units.ItemSize(after), op.Consistent)
			case !op.OK:
				r.wcu[k] += units.FailedWriteCost(before, attempted).Table
			default:
				w := tbl.WriteCost(before, after, false)
				r.wcu[k] += w.Table + w.Index
			}
		}
		r.n[k]++
	}
	for _, t := range res.Timing {
		k := kindKey(t.Size, t.Dup)
		r.ms[k] = append(r.ms[k], t.MS)
	}
	return r, res.Version, nil
}

// avMap decodes DynamoDB JSON (as boto3's low-level client speaks it) into
// attribute values.
func avMap(m map[string]json.RawMessage) map[string]types.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, raw := range m {
		out[k] = avJSON(raw)
	}
	return out
}

func avJSON(raw json.RawMessage) types.AttributeValue {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	for typ, val := range v {
		var s string
		var ss []string
		switch typ {
		case "S":
			json.Unmarshal(val, &s)
			return &types.AttributeValueMemberS{Value: s}
		case "N":
			json.Unmarshal(val, &s)
			return &types.AttributeValueMemberN{Value: s}
		case "B":
			var b []byte // base64 in JSON
			json.Unmarshal(val, &b)
			return &types.AttributeValueMemberB{Value: b}
		case "BOOL":
			var bl bool
			json.Unmarshal(val, &bl)
			return &types.AttributeValueMemberBOOL{Value: bl}
		case "NULL":
			return &types.AttributeValueMemberNULL{Value: true}
		case "SS":
			json.Unmarshal(val, &ss)
			return &types.AttributeValueMemberSS{Value: ss}
		case "NS":
			json.Unmarshal(val, &ss)
			return &types.AttributeValueMemberNS{Value: ss}
		case "M":
			var mm map[string]json.RawMessage
			json.Unmarshal(val, &mm)
			return &types.AttributeValueMemberM{Value: avMap(mm)}
		case "L":
			var l []json.RawMessage
			json.Unmarshal(val, &l)
			lv := make([]types.AttributeValue, len(l))
			for i, e := range l {
				lv[i] = avJSON(e)
			}
			return &types.AttributeValueMemberL{Value: lv}
		}
	}
	return nil
}

// ---------------------------------------------------------------- cold start

func (b *benchRun) coldstart(ctx context.Context) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "functions", "receiver")); err != nil {
		return errors.New("run from the repository root (functions/ not found)")
	}
	dir, err := os.MkdirTemp("", "hookledger-bench-bin")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env, cleanup, err := b.newEnv(ctx, "cold", "")
	if err != nil {
		return err
	}
	defer cleanup()
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	fnEnv := func(fn string) []string {
		return []string{
			"PATH=/usr/bin:/bin", "HOME=" + home, "LAMBDA_TASK_ROOT=" + dir, "_HANDLER=bootstrap",
			"AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1",
			"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=test",
			"AWS_LAMBDA_FUNCTION_NAME=hookledger-" + fn, "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
			fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%d", b.memoryMB()),
			"AWS_ENDPOINT_URL=" + b.ep,
			"HOOKLEDGER_TABLE=" + env.table, "HOOKLEDGER_QUEUE_URL=" + env.queueURL,
			"HOOKLEDGER_SOURCES=" + env.conf.SourcesJSON, "LOG_LEVEL=info",
			// The shipped effect's settings: the processor refuses to start
			// without them (nothing calls them during a cold start). In
			// Lambda they come from the EffectSettings document.
			processor.EffectSettingsEnv + `={"PAYMENTS_URL":"http://127.0.0.1:9","NOTIFY_URL":"http://127.0.0.1:9"}`,
		}
	}
	t := &bench.MD{Title: fmt.Sprintf("Cold start (init = process start → first GET /2018-06-01/runtime/invocation/next on a fake Runtime API; median of %d, this machine's amd64)", b.runs),
		Header: []string{"function", "arm64 size (MiB, as make build)", "amd64 size (MiB)", "init median ms", "init p90 ms", "package init ms (inittrace)", "idle RSS MB"}}
	var attribution []bench.PackageSize
	var attrTotal int64
	var traces = map[string][]bench.PackageInit{}
	fns := []string{"receiver", "processor", "reclaimer"}
	arms, amds := map[string]string{}, map[string]string{}
	for _, fn := range fns { // build everything first: compiles must not overlap the measurements
		if arms[fn], err = bench.Build(ctx, root, dir, fn, "arm64", true); err != nil {
			return err
		}
		if amds[fn], err = bench.Build(ctx, root, dir, fn, "amd64", true); err != nil {
			return err
		}
	}
	syms, err := bench.Build(ctx, root, dir, "receiver", "arm64", false)
	if err != nil {
		return err
	}
	inits, rss := map[string][]float64{}, map[string][]float64{}
	for _, fn := range fns { // one warm-up each: the first exec pays for the page cache
		if _, err := bench.ColdStart(ctx, amds[fn], fnEnv(fn), 1); err != nil {
			return err
		}
	}
	for range b.runs { // interleaved, so a noisy neighbour hits all three alike
		for _, fn := range fns {
			starts, err := bench.ColdStart(ctx, amds[fn], fnEnv(fn), 1)
			if err != nil {
				return err
			}
			inits[fn] = append(inits[fn], float64(starts[0].Init.Microseconds())/1000)
			rss[fn] = append(rss[fn], float64(starts[0].RSSKB)/1024)
		}
	}
	for _, fn := range fns {
		var best []bench.PackageInit
		bestMS := -1.0
		for range 3 { // the least disturbed of three traces
			trace, _ := bench.InitTrace(ctx, amds[fn], fnEnv(fn))
			ms := 0.0
			for _, p := range trace {
				ms += p.MS
			}
			if bestMS < 0 || ms < bestMS {
				best, bestMS = trace, ms
			}
		}
		traces[fn] = best
		sz, _ := os.Stat(arms[fn])
		t.Add(fn, fmt.Sprintf("%.2f (%d bytes)", mb(arms[fn]), sz.Size()), mb(amds[fn]), bench.Median(inits[fn]), bench.Percentile(inits[fn], 90), bestMS, bench.Median(rss[fn]))
	}
	attribution, attrTotal, err = bench.SizeByPackage(ctx, syms)
	if err != nil {
		return err
	}
	// The optional functions: sizes only (the reconciler's cold start needs
	// a provider's API, the bus function's a bus configuration).
	var optional []string
	largest, largestFn := int64(0), ""
	for _, fn := range fns {
		if sz, _ := os.Stat(arms[fn]); sz.Size() > largest {
			largest, largestFn = sz.Size(), fn
		}
	}
	for _, fn := range []string{"reconciler", "bus"} {
		bin, err := bench.Build(ctx, root, dir, fn, "arm64", true)
		if err != nil {
			return err
		}
		sz, _ := os.Stat(bin)
		optional = append(optional, fmt.Sprintf("%s %.2f MiB (%d bytes)", fn, mb(bin), sz.Size()))
		if sz.Size() > largest {
			largest, largestFn = sz.Size(), fn
		}
	}
	verdict := "met"
	if largest > 10_000_000 {
		verdict = "NOT met"
	}
	t.Notes = []string{"The optional functions, arm64, not timed: " + strings.Join(optional, ", ") + ". " +
		fmt.Sprintf("Binaries at most 10 MB (10,000,000 bytes) stripped: the largest is the %s, %d bytes: %s. ", largestFn, largest, verdict) +
		"Init under 50 ms. Init here runs on a full core of this machine; Lambda gives a 256 MB function about 1/7 of a vCPU during init, so CPU-bound init work grows accordingly."}
	t.Print(b.out)
	a := &bench.MD{Title: "What makes the receiver big (arm64, symbols by package; pclntab and type metadata come on top, roughly in proportion)",
		Header: []string{"package", "KB", "share of symbols"}}
	for i, p := range attribution {
		if i >= 18 {
			break
		}
		a.Add(p.Package, float64(p.Bytes)/1024, fmt.Sprintf("%.1f%%", 100*float64(p.Bytes)/float64(attrTotal)))
	}
	var notReceiver int64
	for _, p := range attribution {
		for _, svc := range []string{"/service/ssm ", "/service/secretsmanager ", "/service/sso ", "/service/ssooidc ", "/service/sts ", "/service/signin "} {
			if strings.Contains(p.Package+" ", svc) {
				notReceiver += p.Bytes
			}
		}
	}
	a.Notes = []string{fmt.Sprintf("Secret-store and credential-chain clients (SSM, Secrets Manager, STS, SSO, SSO-OIDC, Sign-In) in the receiver: %.0f KB of symbols. The functions read secrets and the reclaimer continues itself with signed requests of their own (internal/awsjson), not those clients' 2.2 MB; no function links the STS/SSO chain, since in Lambda the credentials come from the environment (config.LambdaAWS).", float64(notReceiver)/1024)}
	a.Print(b.out)
	it := &bench.MD{Title: "Slowest package inits (GODEBUG=inittrace=1, receiver)", Header: []string{"package", "ms", "KB allocated"}}
	for i, p := range traces["receiver"] {
		if i >= 8 {
			break
		}
		it.Add(p.Package, p.MS, float64(p.Bytes)/1024)
	}
	it.Print(b.out)
	return nil
}

func mb(path string) float64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(st.Size()) / (1 << 20)
}

// ---------------------------------------------------------------- throughput

func (b *benchRun) throughput(ctx context.Context) error {
	env, cleanup, err := b.newEnv(ctx, "tput", "")
	if err != nil {
		return err
	}
	defer cleanup()
	cfg, err := b.awsConfig(ctx)
	if err != nil {
		return err
	}
	logs := &logCounter{}
	routes := hookledger.NewRouter() // a routed effect that does nothing
	routes.HandleFunc(hookledger.Any, hookledger.Any, func(context.Context, *hookledger.Event) error { return nil })
	d, err := local.New(env.conf, cfg, engine.MustRoutes(routes), func(string) string { return "" }, env.conf.Logger(logs))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	dctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Run(dctx, ln, 2, 30*time.Second, time.Hour); close(done) }()
	defer func() { stop(); <-done }()
	base := "http://" + ln.Addr().String() + "/webhooks/stripe/acme"
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: b.conc}}
	bodies := make([][]byte, b.tpEvents)
	for i := range bodies {
		bodies[i] = testbody.JSON(fmt.Sprintf("evt_tput_%s_%d", cli.RandomHex(6), i), testbody.Sizes[0])
	}
	lat := make([]float64, b.tpEvents)
	var next atomic.Int64
	var bad atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range b.conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				h, _ := stripeVerifier.Sign(webhook.Message{Body: bodies[i], Now: time.Now()}, benchSecret)
				t0 := time.Now()
				status, _, err := cli.Post(ctx, client, base, h, bodies[i])
				lat[i] = float64(time.Since(t0).Microseconds()) / 1000
				if err != nil || status != http.StatusOK {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	sendDur := time.Since(start)
	deadline := time.Now().Add(2 * time.Minute)
	for logs.processed.Load() < int64(b.tpEvents)-bad.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	e2eDur := time.Since(start)
	processed := logs.processed.Load()

	// The emulator's own rate for bare conditional puts, same concurrency.
	db := dynamodb.NewFromConfig(cfg)
	putLat := make([]float64, b.tpEvents)
	next.Store(0)
	pstart := time.Now()
	for range b.conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(putLat) {
					return
				}
				t0 := time.Now()
				db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &env.table, Item: map[string]types.AttributeValue{
					"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("bare#%d", i)}, "sk": &types.AttributeValueMemberS{Value: "r"},
					"status": &types.AttributeValueMemberS{Value: "received"},
				}, ConditionExpression: aws.String("attribute_not_exists(pk)")})
				putLat[i] = float64(time.Since(t0).Microseconds()) / 1000
			}
		})
	}
	wg.Wait()
	putDur := time.Since(pstart)
	t := &bench.MD{Title: fmt.Sprintf("Throughput on this machine (%d CPUs, shared; hookledger dev in-process against the emulator; %d events of 1 KB, %d concurrent senders)", runtime.NumCPU(), b.tpEvents, b.conc),
		Header: []string{"what", "events/s", "p50 ms", "p99 ms", "notes"}}
	t.Add("receiver (HTTP answer)", float64(b.tpEvents)/sendDur.Seconds(), bench.Median(lat), bench.Percentile(lat, 99), fmt.Sprintf("%d non-200", bad.Load()))
	t.Add("end to end (received → done)", float64(processed)/e2eDur.Seconds(), "", "", fmt.Sprintf("%d of %d processed in %.1f s", processed, b.tpEvents, e2eDur.Seconds()))
	t.Add("emulator: bare conditional PutItem", float64(len(putLat))/putDur.Seconds(), bench.Median(putLat), bench.Percentile(putLat, 99), "the ceiling the emulator sets")
	t.Notes = []string{"Each accepted event costs 2 receiver requests (3 with payload policy always) and 2 processor writes plus SQS receive/delete, so the end-to-end rate is bounded by the emulator's request rate divided by ~6; the Go side is not the bottleneck here (see the micro-benchmarks)."}
	t.Print(b.out)
	return nil
}
