package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/lab/latency"
	"github.com/hookledger/hookledger/ledger"
)

// The bill (section cost): what a deployment of the template costs a month,
// fixed and variable, measured against the emulator with AWS latencies
// injected for the durations, priced at list prices, and the targets.

// billSize is one body size's delivery, under the shipped defaults.
type billSize struct {
	label      string
	size       int
	needs      string // what the size needs beyond the defaults
	newEv, dup bench.Profile
}

// billIdle is one reclaimer run with nothing to do.
type billIdle struct {
	calls       map[string]int
	u           awstest.Usage
	logBytes    float64
	metricBytes float64
	ms          float64
	metrics     []string
}

type billMeasures struct {
	sizes        []billSize
	steps        map[int][2]float64 // steps -> extra write units, extra processor ms (over one step)
	batchMS      [2]float64         // one processor invocation, batches of 1 and of 10 (3 KB)
	idle         billIdle
	doneRCU      float64 // the reclaimer's read units per done record's entry, both looks at it
	doneKnown    float64 // the share of the second look passed without a read
	happyMetrics []string
	samples      int
}

// billSizes are the sizes the bill prices: 1, 3, 30, 300 KB and a 2 MB body.
var billSizes = []struct {
	label string
	size  int
	needs string
}{
	{"1 KB", 1 << 10, ""}, {"3 KB", 3 << 10, ""}, {"30 KB", 30 << 10, ""},
	{"300 KB", 300 << 10, "HOOKLEDGER_MAX_BODY raised (default 256 KiB)"},
	{"2 MB", 2 << 20, "the payload store (LargeBodyStoreDays > 0) and HOOKLEDGER_MAX_BODY raised"},
}

// splitLogs counts the bytes of the handlers' log lines and of their metric
// (EMF) lines apart, and the metric names.
type splitLogs struct {
	logs, metrics int64
	names         map[string]bool
}

var emfName = regexp.MustCompile(`\{"Name":"([A-Za-z]+)","Unit"`)

func (s *splitLogs) Write(p []byte) (int, error) {
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if bytes.Contains(line, []byte(`"_aws":`)) {
			s.metrics += int64(len(line))
			for _, m := range emfName.FindAllSubmatch(line, -1) {
				if s.names == nil {
					s.names = map[string]bool{}
				}
				s.names[string(m[1])] = true
			}
			continue
		}
		s.logs += int64(len(line))
	}
	return len(p), nil
}

func (s *splitLogs) take() (logs, metrics float64) {
	l, m := float64(s.logs), float64(s.metrics)
	s.logs, s.metrics = 0, 0
	return l, m
}

// billHandlers are the three handlers on one SDK config, logging to one
// splitLogs.
type billHandlers struct {
	rcv  *receiver.Handler
	proc *processor.Handler
	rec  *reclaimer.Handler
	logs *splitLogs
}

func newBillHandlers(conf config.Config, cfg aws.Config, routes *hookledger.Router) (*billHandlers, error) {
	logs := &splitLogs{}
	log := conf.Logger(logs)
	rcv, err := receiver.FromConfig(conf, cfg, func(string) string { return "" }, log)
	if err != nil {
		return nil, err
	}
	if routes == nil {
		routes = hookledger.NewRouter()
		routes.HandleFunc(hookledger.Any, hookledger.Any, func(context.Context, *hookledger.Event) error { return nil })
	}
	proc, err := processor.FromConfig(conf, cfg, engine.MustRoutes(routes), log)
	if err != nil {
		return nil, err
	}
	rec, err := reclaimer.FromConfig(conf, cfg, log)
	if err != nil {
		return nil, err
	}
	emf := metric.New(logs, "bench") // in Lambda the metric lines share the log's output
	rcv.Metrics, proc.Metrics, rec.Metrics = emf, emf, emf
	return &billHandlers{rcv: rcv, proc: proc, rec: rec, logs: logs}, nil
}

// indexEntryBytes is a due-index entry's billed size: the index keys, the
// table keys, and 100 bytes of overhead (DynamoDB's item-size rules).
func indexEntryBytes(id ledger.ID) float64 {
	return float64(len("pk")+len(id.PK())+len("sk")+1+len("due_shard")+3+len("due_at")+8) + 100
}

// measureBill measures what the bill prices: each size's delivery, steps,
// processor batches, an idle reclaimer run and its look at done records.
func (b *benchRun) measureBill(ctx context.Context) (*billMeasures, error) {
	env, cleanup, err := b.newEnv(ctx, "bill", "1s")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	env.conf.DLQURL = env.dlqURL
	bucket, dropBucket, err := b.bucket(ctx, env)
	if err != nil {
		return nil, err
	}
	defer dropBucket()
	m, acc, counted, err := b.metered(ctx, env)
	if err != nil {
		return nil, err
	}
	timed, err := b.awsConfig(ctx, latency.Published(7).APIOption)
	if err != nil {
		return nil, err
	}
	sq := sqs.NewFromConfig(env.raw)
	out := &billMeasures{steps: map[int][2]float64{}, samples: b.billSamples}

	// An idle reclaimer run, first, on the empty table: what the schedule
	// costs when nothing happens.
	hi, err := newBillHandlers(env.conf, counted, nil)
	if err != nil {
		return nil, err
	}
	m.Reset()
	acc.Take()
	if _, err := hi.rec.Handle(ctx, nil); err != nil {
		return nil, fmt.Errorf("idle reclaimer run: %w", err)
	}
	out.idle.calls, out.idle.u = m.Snapshot(), acc.Take()
	out.idle.logBytes, out.idle.metricBytes = hi.logs.take()
	out.idle.metrics = sortedNames(hi.logs.names)
	ht, err := newBillHandlers(env.conf, timed, nil)
	if err != nil {
		return nil, err
	}
	var idleMS []float64
	for range 5 {
		t0 := time.Now()
		if _, err := ht.rec.Handle(ctx, nil); err != nil {
			return nil, err
		}
		idleMS = append(idleMS, msSince(t0))
	}
	out.idle.ms = bench.Median(idleMS)
	ht.logs.take()

	for _, spec := range billSizes {
		conf := env.conf
		var body []byte
		key := "evt_bill_" + cli.RandomHex(8)
		switch {
		case spec.size > config.MaxBodyLimit:
			conf.PayloadBucket, conf.PayloadPrefix, conf.MaxBody = bucket, config.DefaultPayloadPrefix, config.MaxBodyWithStore
			body = largeBody(key, spec.size)
		case spec.size > receiver.DefaultMaxBody:
			conf.MaxBody = config.MaxBodyLimit
			body = testbody.JSON(key, spec.size)
		default:
			body = testbody.JSON(key, spec.size)
		}
		hc, err := newBillHandlers(conf, counted, nil)
		if err != nil {
			return nil, err
		}
		hc.logs.names = nil
		s, err := b.measureSize(ctx, hc, sq, env.queueURL, body, m, acc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.label, err)
		}
		if spec.size == 3<<10 {
			out.happyMetrics = sortedNames(hc.logs.names)
		}
		th, err := newBillHandlers(conf, timed, nil)
		if err != nil {
			return nil, err
		}
		if err := b.timeSize(ctx, th, sq, env.queueURL, spec.size, &s); err != nil {
			return nil, fmt.Errorf("%s timing: %w", spec.label, err)
		}
		s.label, s.size, s.needs = spec.label, spec.size, spec.needs
		out.sizes = append(out.sizes, s)
	}

	// Processor invocations of 1 and 10 events side by side (3 KB).
	for i, n := range []int{1, 10} {
		var ms []float64
		for range 5 {
			batch, err := b.queueBatch(ctx, ht, sq, env.queueURL, n)
			if err != nil {
				return nil, err
			}
			t0 := time.Now()
			if resp, _ := ht.proc.Handle(ctx, batch); len(resp.BatchItemFailures) > 0 {
				return nil, fmt.Errorf("a batch of %d: the processor failed %d messages", n, len(resp.BatchItemFailures))
			}
			ms = append(ms, msSince(t0))
		}
		out.batchMS[i] = bench.Median(ms)
	}

	if err := b.measureSteps(ctx, env, counted, timed, m, acc, out); err != nil {
		return nil, err
	}

	// The reclaimer's looks at the done records all of the above left: two
	// runs in one process, as a warm container makes them every minute. The
	// first reads each entry when it falls due (an eventually consistent
	// read); the second reads the entries again because the first left its
	// marks the lag behind its start, and passes them on the first's word.
	// Over both, less the idle runs' own queries. The lag is stretched so
	// that the second run reads again every entry the first read (the
	// measurement above took minutes): on AWS the lag and the schedule
	// period are both a minute, so every entry gets both looks.
	hi.rec.Lag = time.Hour
	time.Sleep(1500 * time.Millisecond) // past HOOKLEDGER_RECLAIM_AFTER (1 s here)
	acc.Take()
	m.Reset()
	var looks [2]reclaimer.Report
	for i := range looks {
		if looks[i], err = hi.rec.Handle(ctx, nil); err != nil {
			return nil, err
		}
	}
	u := acc.Take()
	if looks[0].Scanned == 0 || looks[0].Redriven() > 0 || looks[1].Scanned != looks[0].Scanned {
		return nil, fmt.Errorf("the reclaimer's looks at done records: %+v, then %+v (want the same entries read twice)", looks[0], looks[1])
	}
	out.doneRCU = max(0, u.RCU-2*out.idle.u.RCU) / float64(looks[0].Scanned)
	out.doneKnown = float64(looks[1].Known) / float64(looks[1].Scanned)
	hi.logs.take()
	return out, nil
}

// measureSize measures one body's new delivery, processing and duplicate
// with the request meter and the unit accountant.
func (b *benchRun) measureSize(ctx context.Context, h *billHandlers, sq *sqs.Client, queueURL string, body []byte, m *awstest.Meter, acc *awstest.Accountant) (billSize, error) {
	req := benchRequest(body)
	m.Reset()
	acc.Take()
	h.logs.take()
	if resp, _ := h.rcv.Handle(ctx, req); resp.Headers["X-Hookledger-Result"] != string(receiver.Accepted) {
		return billSize{}, fmt.Errorf("receiver answered %d %s, want accepted", resp.StatusCode, resp.Headers["X-Hookledger-Result"])
	}
	newCalls, uNew := m.Snapshot(), acc.Take()
	logNew, metNew := h.logs.take()
	batch, err := receiveOne(ctx, sq, queueURL)
	if err != nil {
		return billSize{}, err
	}
	msg := len(batch.Records[0].Body)
	m.Reset()
	if resp, _ := h.proc.Handle(ctx, batch); len(resp.BatchItemFailures) > 0 {
		return billSize{}, errors.New("the processor failed the new event's message")
	}
	procCalls, uProc := m.Snapshot(), acc.Take()
	logProc, metProc := h.logs.take()
	if resp, _ := h.rcv.Handle(ctx, req); resp.Headers["X-Hookledger-Result"] != string(receiver.Duplicate) {
		return billSize{}, fmt.Errorf("duplicate answered %d %s", resp.StatusCode, resp.Headers["X-Hookledger-Result"])
	}
	uDup := acc.Take()
	logDup, metDup := h.logs.take()
	var id ledger.ID
	{
		var ev struct {
			ID string `json:"id"`
		}
		json.Unmarshal(body, &ev)
		id = ledger.ID{Source: "stripe", Tenant: "acme", Key: ev.ID}
	}
	table := 0.0
	if n := len(uProc.Written); n > 0 {
		table += float64(uProc.Written[n-1]) + 100 // the record as complete left it
	}
	for _, w := range uNew.Written[min(1, len(uNew.Written)):] {
		table += float64(w) + 100 // a payload item, if the new event wrote one
	}
	var s billSize
	s.newEv = bench.Profile{
		WCU: uNew.WCU + uNew.IndexWCU + uProc.WCU + uProc.IndexWCU, RCU: uNew.RCU + uProc.RCU,
		SQSSend: uNew.SQS, SQSChunks: awstest.SQSRequests(msg),
		LogBytes: logNew + logProc, MetricBytes: metNew + metProc,
		TableBytes: table, IndexBytes: indexEntryBytes(id), BodyBytes: float64(len(body)),
		S3Puts: float64(newCalls["S3.PutObject"]), S3Gets: float64(procCalls["S3.GetObject"]),
	}
	if s.newEv.S3Puts > 0 {
		s.newEv.S3Bytes = float64(len(body))
	}
	s.dup = bench.Profile{WCU: uDup.WCU + uDup.IndexWCU, RCU: uDup.RCU, SQSSend: uDup.SQS, LogBytes: logDup, MetricBytes: metDup, BodyBytes: float64(len(body))}
	return s, nil
}

// timeSize times the same three steps with AWS latencies injected: medians
// of the bill's samples.
func (b *benchRun) timeSize(ctx context.Context, h *billHandlers, sq *sqs.Client, queueURL string, size int, s *billSize) error {
	var tNew, tProc, tDup []float64
	n := b.billSamples
	if size > config.MaxBodyLimit {
		n = max(5, n/4) // 2 MB bodies through S3: fewer, slower samples
	}
	for range n {
		var body []byte
		if size > config.MaxBodyLimit {
			body = largeBody("evt_billt_"+cli.RandomHex(8), size)
		} else {
			body = testbody.JSON("evt_billt_"+cli.RandomHex(8), size)
		}
		req := benchRequest(body)
		t0 := time.Now()
		h.rcv.Handle(ctx, req)
		tNew = append(tNew, msSince(t0))
		batch, err := receiveOne(ctx, sq, queueURL)
		if err != nil {
			return err
		}
		t0 = time.Now()
		h.proc.Handle(ctx, batch)
		tProc = append(tProc, msSince(t0))
		t0 = time.Now()
		h.rcv.Handle(ctx, req)
		tDup = append(tDup, msSince(t0))
	}
	h.logs.take()
	s.newEv.ReceiverMS, s.newEv.ProcessorMS, s.dup.ReceiverMS = bench.Median(tNew), bench.Median(tProc), bench.Median(tDup)
	return nil
}

// queueBatch sends n 3 KB events through h's receiver and takes their n
// messages off the queue as one batch.
func (b *benchRun) queueBatch(ctx context.Context, h *billHandlers, sq *sqs.Client, queueURL string, n int) (events.SQSEvent, error) {
	for range n {
		if resp, _ := h.rcv.Handle(ctx, benchRequest(testbody.JSON("evt_billb_"+cli.RandomHex(8), 3<<10))); resp.StatusCode != 200 {
			return events.SQSEvent{}, fmt.Errorf("receiver answered %d", resp.StatusCode)
		}
	}
	h.logs.take()
	// One message per event: the emulator sometimes cuts a send's answer
	// short after queueing the message, and the SDK sends it again; two
	// copies of one event in a batch would race for its lease.
	var batch events.SQSEvent
	seen := map[string]bool{}
	for tries := 0; len(batch.Records) < n && tries < 20; tries++ {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: int32(n - len(batch.Records)), WaitTimeSeconds: 1})
		if err != nil {
			return batch, err
		}
		for _, msg := range out.Messages {
			sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: msg.ReceiptHandle})
			m, err := queue.Decode(aws.ToString(msg.Body))
			if err != nil || seen[m.Key] {
				continue
			}
			seen[m.Key] = true
			batch.Records = append(batch.Records, events.SQSMessage{MessageId: aws.ToString(msg.MessageId), Body: aws.ToString(msg.Body), ReceiptHandle: aws.ToString(msg.ReceiptHandle)})
		}
	}
	if len(batch.Records) < n {
		return batch, fmt.Errorf("took %d of %d messages off the queue", len(batch.Records), n)
	}
	return batch, nil
}

// measureSteps measures handlers of 1, 2 and 3 no-op steps: the processor's
// write units and its time with AWS latencies, each over a step's worth.
func (b *benchRun) measureSteps(ctx context.Context, env *benchEnv, counted, timed aws.Config, m *awstest.Meter, acc *awstest.Accountant, out *billMeasures) error {
	routes := hookledger.NewRouter()
	for n := 1; n <= 3; n++ {
		routes.HandleFunc("stripe", fmt.Sprintf("steps.%d", n), func(ctx context.Context, ev *hookledger.Event) error {
			for i := range n {
				if _, err := ev.Step(ctx, fmt.Sprintf("step%d", i), func(context.Context, string) (string, error) { return "ok_0123456789", nil }); err != nil {
					return err
				}
			}
			return nil
		})
	}
	plain, err := ledger.New(dynamodb.NewFromConfig(env.raw), env.conf.LedgerOptions())
	if err != nil {
		return err
	}
	message := func(n int) (events.SQSEvent, error) {
		id := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_steps_" + cli.RandomHex(8)}
		typ := fmt.Sprintf("steps.%d", n)
		if _, _, err := plain.Create(ctx, ledger.NewEvent{ID: id, Type: typ, BodySHA256: "x"}); err != nil {
			return events.SQSEvent{}, err
		}
		body, err := queue.Encode(queue.Message{Source: id.Source, Tenant: id.Tenant, Key: id.Key, Type: typ, SHA256: "x", Body: []byte(`{}`)})
		return events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-" + id.Key, Body: body}}}, err
	}
	pc, err := processor.FromConfig(env.conf, counted, engine.MustRoutes(routes), discardLog())
	if err != nil {
		return err
	}
	pt, err := processor.FromConfig(env.conf, timed, engine.MustRoutes(routes), discardLog())
	if err != nil {
		return err
	}
	var base [2]float64
	for n := 1; n <= 3; n++ {
		ev, err := message(n)
		if err != nil {
			return err
		}
		acc.Take()
		if resp, _ := pc.Handle(ctx, ev); len(resp.BatchItemFailures) > 0 {
			return fmt.Errorf("%d steps: the processor failed", n)
		}
		u := acc.Take()
		var ms []float64
		for range max(5, b.billSamples/2) {
			ev, err := message(n)
			if err != nil {
				return err
			}
			t0 := time.Now()
			pt.Handle(ctx, ev)
			ms = append(ms, msSince(t0))
		}
		got := [2]float64{u.WCU + u.IndexWCU, bench.Median(ms)}
		if n == 1 {
			base = got
		}
		out.steps[n] = [2]float64{got[0] - base[0], max(0, got[1]-base[1])}
	}
	return nil
}

func billItem(what, quantity string, usd float64, source string) bench.BillItem {
	return bench.BillItem{What: what, Quantity: quantity, USD: usd, Source: source}
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func sortedNames(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var _ io.Writer = (*splitLogs)(nil)

// ---------------------------------------------------------------- pricing

// billRates are the monthly volumes the all-in bill is for.
var billRates = []float64{100e3, 1e6, 10e6, 100e6}

// targetRate is the traffic the variable-cost targets are priced at:
// events a second on the queue.
const targetRate = 10.0

// queueRate is the events a second reaching the queue at deliveries a month.
func queueRate(deliveries, dupRate float64) float64 {
	return deliveries * (1 - dupRate) / bench.Month.Seconds()
}

// assume is the model's premises for the template at rate events a second
// on the queue, through the given front door.
func (b *benchRun) assume(st bench.Stack, bm *billMeasures, rate float64, functionURL bool) (bench.Assumptions, bool) {
	batch, receives, measured := b.batchAt(rate, st)
	a := bench.Assumptions{MemoryMB: st.MemoryMB, RetentionDays: ledger.DefaultRetention.Hours() / 24, LogRetentionDays: float64(st.LogRetentionDays),
		FunctionURL: functionURL, Batch: batch, ReceivesPerEvent: receives, PITR: st.PITR,
		AccessLogBytes: float64(len(st.AccessLogLine()))}
	if st.PlatformLines() {
		a.PlatformLogBytes = platformLogBytes
	}
	p1, p10 := bm.batchMS[0], bm.batchMS[1]
	a.BatchMS = func(b float64) float64 { return p1 + (p10-p1)*(b-1)/9 }
	return a, measured
}

// platformLogBytes is an estimate of Lambda's START, END and REPORT lines
// for one invocation in the text format (about 80, 50 and 150 bytes): only
// used when the template keeps them.
const platformLogBytes = 280

// profiles is the 3 KB delivery, with the reclaimer's looks at the done
// record's entry added to the new event, and steps more than one.
func (bm *billMeasures) profiles(label string, steps int) (bench.Profile, bench.Profile) {
	for _, s := range bm.sizes {
		if s.label == label {
			nw := s.newEv
			nw.RCU += bm.doneRCU
			d := bm.steps[steps]
			nw.WCU += d[0]
			nw.ProcessorMS += d[1]
			return nw, s.dup
		}
	}
	panic("no bill profile " + label)
}

// fixedBill is what a deployment costs a month whatever its traffic (at 0
// deliveries: idle), item by item.
func (b *benchRun) fixedBill(st bench.Stack, bm *billMeasures, door string) []bench.BillItem {
	runs := bench.Month.Minutes() / st.ReclaimEvery.Minutes()
	gb := float64(st.MemoryMB) / 1024
	idle := bm.idle
	dynamo := idle.u.WCU*bench.PriceDynamoWrite.USD/1e6 + idle.u.RCU*bench.PriceDynamoRead.USD/1e6
	sqsReq := idle.u.SQS
	logs := (idle.logBytes + idle.metricBytes) / 1e9 * (bench.PriceLogsIngest.USD + float64(st.LogRetentionDays)/30.4*bench.PriceLogsStore.USD)
	if st.PlatformLines() {
		logs += platformLogBytes / 1e9 * (bench.PriceLogsIngest.USD + float64(st.LogRetentionDays)/30.4*bench.PriceLogsStore.USD)
	}
	lambda := bench.PriceLambdaRequests.USD/1e6 + math.Ceil(idle.ms)/1000*gb*bench.PriceLambdaArm.USD
	var ops []string
	for op, n := range idle.calls {
		ops = append(ops, fmt.Sprintf("%d %s", n, op))
	}
	sort.Strings(ops)
	conds := []string{"HasHttpApi"}
	switch door {
	case "function URL":
		conds = []string{"HasFunctionUrl"}
	case "both":
		conds = []string{"HasHttpApi", "HasFunctionUrl", "HasBothFrontDoors"}
	}
	alarms := st.AlarmsWith(conds...)
	polls := float64(bench.ESMPollers) * bench.Month.Seconds() / bench.ESMLongPoll.Seconds()
	items := []bench.BillItem{
		billItem("alarms", fmt.Sprintf("%d alarm metrics", alarms), float64(alarms)*bench.PriceAlarm.USD, "template.yaml's alarms whose conditions hold; PriceAlarm"),
		billItem("custom metrics on an idle stack", countNames(idle.metrics), float64(len(idle.metrics))*bench.PriceCustomMetric.USD, "metric names in the idle reclaimer run's output (measured)"),
		billItem("reclaimer: invocations and duration", fmt.Sprintf("%.0f runs, %.0f ms each at %d MB", runs, idle.ms, st.MemoryMB), runs*lambda, "ReclaimSchedule; an idle run's time with AWS latencies (measured)"),
		billItem("reclaimer: DynamoDB", fmt.Sprintf("%.1f WCU + %.1f RCU a run", idle.u.WCU, idle.u.RCU), runs*dynamo, "an idle run: "+strings.Join(ops, ", ")+" (measured)"),
		billItem("reclaimer: SQS", fmt.Sprintf("%.0f requests a run", sqsReq), runs*sqsReq*bench.PriceSQS.USD/1e6, "its queue-depth read and dead-letter receive (measured)"),
		billItem("reclaimer: logs", fmt.Sprintf("%.0f B a run", idle.logBytes+idle.metricBytes), runs*logs, "its run line (measured); Lambda's own lines "+map[bool]string{true: "kept", false: "dropped (SystemLogLevel " + st.SystemLogLevel + ")"}[st.PlatformLines()]),
		billItem("event source: idle long polls", fmt.Sprintf("%d pollers × one 20 s poll: %.0f requests", bench.ESMPollers, polls), polls*bench.PriceSQS.USD/1e6, "five pollers while the queue is empty (the batching section's premises); an upper bound: traffic replaces them with receives that carry messages"),
	}
	if st.KMSTable {
		kms := bench.Month.Hours() * 12 // one decrypt per 5 minutes: the reclaimer's connection
		items = append(items, billItem("KMS: the table's AWS managed key", fmt.Sprintf("≤ %.0f requests", kms), kms/1e4*bench.PriceKMS.USD,
			"DynamoDB caches the table key per connection and asks KMS again after five minutes without use; the reclaimer's connection, used every minute, at most once per five minutes (an upper bound)"))
	}
	if st.DashboardCondition == "" {
		items = append(items, billItem("dashboard", "1", bench.PriceDashboard.USD, "PriceDashboard (beyond an account's first three)"))
	}
	return items
}

// allIn is the bill for deliveries a month: the variable cost at the batch
// the template produces at that rate, the fixed items, and the event
// source's long polls beyond the receives the events make themselves.
func (b *benchRun) allIn(st bench.Stack, bm *billMeasures, deliveries, dupRate float64, door string) (total, variable, fixed float64, batch float64) {
	a, _ := b.assume(st, bm, queueRate(deliveries, dupRate), door == "function URL")
	nw, dp := bm.profiles("3 KB", 1)
	v := bench.Cost(nw, dp, dupRate, a).Scale(deliveries)
	variable = v.Total()
	items := b.fixedBill(st, bm, door)
	polls := float64(bench.ESMPollers) * bench.Month.Seconds() / bench.ESMLongPoll.Seconds()
	for _, it := range items {
		if it.What == "event source: idle long polls" {
			it.USD = math.Max(0, polls-v.SQSReceives) * bench.PriceSQS.USD / 1e6
		}
		if strings.HasPrefix(it.What, "KMS") {
			it.USD *= 3 // three functions' connections, each at most once per five minutes
		}
		fixed += it.USD
	}
	fixed += float64(len(bm.happyMetrics)) * bench.PriceCustomMetric.USD // traffic every hour keeps them on
	return variable + fixed, variable, fixed, a.Batch
}

func (b *benchRun) cost(ctx context.Context) error {
	st, err := b.readStack()
	if err != nil {
		return err
	}
	bm, err := b.measureBill(ctx)
	if err != nil {
		return err
	}
	b.printBill(st, bm)
	return nil
}

func (b *benchRun) printBill(st bench.Stack, bm *billMeasures) {
	prices := &bench.MD{Title: "List prices used (us-east-1; read " + bench.PricesRead + " unless the source says otherwise)", Header: []string{"item", "USD", "per", "source"}}
	for _, p := range bench.AllPrices() {
		prices.Add(p.What, fmt.Sprintf("%g", p.USD), p.Per, p.Source)
	}
	prices.Notes = []string{"These pages could not be opened live from this machine; each figure is the most recent found through the search tool (archived page or a dated secondary source quoting it). Free tiers are ignored (an account's other workloads use them), and so is the TTL deletion of expired items, which DynamoDB does without charge (its index entries go with them)."}
	prices.Print(b.out)

	_, _, measured10 := b.batchAt(targetRate, st)
	batchSrc := "measured (batching section)"
	if !measured10 {
		batchSrc = "the batching model (the batching section did not run)"
	}
	stack := &bench.MD{Title: "The deployment priced (read from template.yaml)", Header: []string{"setting", "value"}}
	stack.Add("event source", fmt.Sprintf("BatchSize %d, BatchWindowSeconds %d (default), %d pollers, ProcessorConcurrency %d", st.BatchSize, int(st.BatchWindow/time.Second), bench.ESMPollers, st.Concurrency))
	stack.Add("functions", fmt.Sprintf("%d MB arm64; Lambda's own log lines %s", st.MemoryMB, map[bool]string{true: "kept", false: "dropped (SystemLogLevel " + st.SystemLogLevel + ")"}[st.PlatformLines()]))
	stack.Add("ledger", fmt.Sprintf("on demand; %g-day retention (ledger.DefaultRetention); PITR %v; KMS (AWS managed key) %v", ledger.DefaultRetention.Hours()/24, st.PITR, st.KMSTable))
	stack.Add("logs", fmt.Sprintf("%d-day retention; the HTTP API's access log line %d B (its format with typical values)", st.LogRetentionDays, len(st.AccessLogLine())))
	stack.Add("alarms", fmt.Sprintf("%d with the HTTP API, %d with the function URL, %d with both", st.AlarmsWith("HasHttpApi"), st.AlarmsWith("HasFunctionUrl"), st.AlarmsWith("HasHttpApi", "HasFunctionUrl", "HasBothFrontDoors")))
	stack.Add("dashboard", map[bool]string{true: "always", false: "only when " + st.DashboardCondition + " (the prod stage)"}[st.DashboardCondition == ""])
	stack.Add("happy-path custom metrics", countNames(bm.happyMetrics)+" — measured in the handlers' output")
	stack.Add("batch sizes", batchSrc)
	stack.Print(b.out)

	// Each size's delivery, measured.
	sz := &bench.MD{Title: fmt.Sprintf("Per delivery, shipped defaults (payload on-trouble), measured against the emulator; ms with AWS latencies injected, median of %d", bm.samples),
		Header: []string{"body", "needs", "new: WCU", "new: RCU", "SQS chunks", "log B (metric B)", "table B kept", "receiver ms", "processor ms", "duplicate: WCU", "duplicate ms"}}
	for _, s := range bm.sizes {
		sz.Add(s.label, s.needs, s.newEv.WCU, s.newEv.RCU, s.newEv.SQSChunks, fmt.Sprintf("%.0f (%.0f)", s.newEv.LogBytes, s.newEv.MetricBytes),
			s.newEv.TableBytes, s.newEv.ReceiverMS, s.newEv.ProcessorMS, s.dup.WCU, s.dup.ReceiverMS)
	}
	sz.Notes = []string{fmt.Sprintf("WCU: table and due index, receiver and processor (claim, complete): a new event writes the due index once, at Create; done records keep their entry, which the reclaimer reads (%.2f RCU per entry over two runs in one process, measured: an eventually consistent read when it falls due, its share of the queries; the second run, which reads it again because each run's mark trails its start by the lag, passed %.0f%% of them on the first's word; a run in a fresh container reads them again) — added to the new event in the tables below. "+
		"Processor invocation with AWS latencies: %.1f ms for one event, %.1f ms for ten run side by side (3 KB; the model interpolates by batch size). "+
		"Steps: each step beyond the first adds %.0f WCU and %.1f ms (two steps), %.0f WCU and %.1f ms (three).",
		bm.doneRCU, 100*bm.doneKnown, bm.batchMS[0], bm.batchMS[1], bm.steps[2][0], bm.steps[2][1], bm.steps[3][0], bm.steps[3][1])}
	sz.Print(b.out)

	b.printVariable(st, bm)
	b.printFixed(st, bm)
	b.printAllIn(st, bm)
	b.printLevers(st, bm)
	b.printTargets(st, bm)
}

// variable prices a million deliveries of label with dupRate duplicates
// and steps steps at rate events/s on the queue.
func (b *benchRun) variable(st bench.Stack, bm *billMeasures, label string, dupRate float64, steps int, rate float64, functionURL bool) (bench.Breakdown, bench.Assumptions) {
	a, _ := b.assume(st, bm, rate, functionURL)
	nw, dp := bm.profiles(label, steps)
	return bench.Cost(nw, dp, dupRate, a), a
}

func (b *benchRun) printVariable(st bench.Stack, bm *billMeasures) {
	t := &bench.MD{Title: fmt.Sprintf("Variable cost per million deliveries, 3 KB, %.0f%% duplicates, at the batch the template's event source makes", b.dupRate*100),
		Header: []string{"events/s on the queue", "front door", "batch", "API GW", "Lambda", "DynamoDB", "SQS", "Logs", "total"}}
	for _, rate := range esmRates {
		for _, url := range []bool{false, true} {
			c, a := b.variable(st, bm, "3 KB", b.dupRate, 1, rate, url)
			t.Add(bench.Num(rate), doorName(url), a.Batch, usd(c.APIGateway), usd(c.Lambda), usd(c.DynamoDB), usd(c.SQS), usd(c.Logs), usd(c.Total()))
		}
	}
	t.Notes = []string{"A delivery is one POST to the receiver; duplicates never reach the queue, so 10 events/s on the queue is about 14 deliveries/s at 30% duplicates (37M deliveries a month). " +
		"Lambda: the measured handler times with AWS latencies, billed per started ms, and one processor invocation per batch; SQS: send, about one receive per event (SQS answers a long poll with the first message there: the larger of one and the emulator's measured count), one DeleteMessageBatch per batch; " +
		"DynamoDB: write and read units, 7 days of storage of the record (and the due-index entry), point-in-time recovery on the table's size; logs: the handlers' lines and metric lines as measured, the HTTP API's access log line, Lambda's own lines only if the template keeps them."}
	t.Print(b.out)

	bySize := &bench.MD{Title: fmt.Sprintf("Variable cost per million deliveries by body size (%.0f%% duplicates, 10 events/s on the queue)", b.dupRate*100),
		Header: []string{"body", "needs", "HTTP API", "function URL", "of which DynamoDB", "of which S3"}}
	for _, s := range bm.sizes {
		h, _ := b.variable(st, bm, s.label, b.dupRate, 1, targetRate, false)
		u, _ := b.variable(st, bm, s.label, b.dupRate, 1, targetRate, true)
		bySize.Add(s.label, s.needs, usd(h.Total()), usd(u.Total()), usd(h.DynamoDB), usd(h.S3))
	}
	bySize.Notes = []string{"The HTTP API meters a request per started 512 KB (a 2 MB body: 5 requests, counted above). A body over HOOKLEDGER_MAX_BODY (256 KiB by default) is refused; up to 1 MiB rides gzip'd in the queue message; beyond that the payload store (S3) keeps it and the message carries its key. Durations with AWS latencies, S3 included."}
	bySize.Print(b.out)

	byDup := &bench.MD{Title: "Variable cost per million deliveries by duplicate share (3 KB, 10 events/s on the queue)", Header: []string{"duplicates", "HTTP API", "function URL", "per million unique events (HTTP API)"}}
	for _, d := range []float64{0, 0.3, 0.9} {
		h, _ := b.variable(st, bm, "3 KB", d, 1, targetRate, false)
		u, _ := b.variable(st, bm, "3 KB", d, 1, targetRate, true)
		byDup.Add(fmt.Sprintf("%.0f%%", d*100), usd(h.Total()), usd(u.Total()), usd(h.Total()/(1-d)))
	}
	byDup.Notes = []string{"A duplicate is one failed conditional put (1 WCU), no queue message, no processor; the share of the batch-bound costs is that of the events that do reach the queue."}
	byDup.Print(b.out)

	bySteps := &bench.MD{Title: fmt.Sprintf("Variable cost per million deliveries by steps per event (3 KB, %.0f%% duplicates, 10 events/s on the queue)", b.dupRate*100), Header: []string{"steps", "HTTP API", "function URL"}}
	for _, n := range []int{1, 2, 3} {
		h, _ := b.variable(st, bm, "3 KB", b.dupRate, n, targetRate, false)
		u, _ := b.variable(st, bm, "3 KB", b.dupRate, n, targetRate, true)
		bySteps.Add(n, usd(h.Total()), usd(u.Total()))
	}
	bySteps.Notes = []string{"A step's completion rides on the next ledger write, so one step costs what no step does; each further step is one UpdateItem (1 WCU) and a DynamoDB round trip of processor time. Your effects' own time and calls are not in these figures."}
	bySteps.Print(b.out)
}

func (b *benchRun) printFixed(st bench.Stack, bm *billMeasures) {
	for _, door := range []string{"HTTP API", "function URL"} {
		items := b.fixedBill(st, bm, door)
		t := &bench.MD{Title: "Fixed monthly cost of an idle deployment, shipped defaults, " + door + " (730 hours)", Header: []string{"item", "quantity", "USD/month", "from"}}
		for _, it := range items {
			t.Add(it.What, it.Quantity, usd(it.USD), it.Source)
		}
		t.Add("total", "", usd(bench.BillTotal(items)), "")
		t.Notes = []string{fmt.Sprintf("Not in it: the dashboard, which only the prod stage gets (%s a month beyond an account's first three); SNS (an e-mail topic sends nothing while idle; its first 1,000 e-mails a month are free); the schedule (EventBridge does not charge for scheduled rules' events); SSM parameters (standard ones are free) and Secrets Manager secrets ($0.40 each a month, when you keep your signing secrets there); the API Gateway, the function URL and empty log groups (no charge without requests or data).", usd(bench.PriceDashboard.USD))}
		t.Print(b.out)
	}
}

func (b *benchRun) printAllIn(st bench.Stack, bm *billMeasures) {
	t := &bench.MD{Title: fmt.Sprintf("All-in monthly bill: 3 KB, %.0f%% duplicates, shipped defaults", b.dupRate*100),
		Header: []string{"deliveries/month", "front door", "events/s on the queue", "batch", "variable", "fixed", "total", "per million deliveries"}}
	for _, n := range billRates {
		for _, door := range []string{"HTTP API", "function URL"} {
			total, v, f, batch := b.allIn(st, bm, n, b.dupRate, door)
			t.Add(fmt.Sprintf("%.0fk", n/1e3), door, fmt.Sprintf("%.3g", queueRate(n, b.dupRate)), batch, usd(v), usd(f), usd(total), usd(total/n*1e6))
		}
	}
	batchSrc := "the batching section's measurements"
	if _, _, measured := b.batchAt(targetRate, st); !measured {
		batchSrc = "the batching model's (the batching section did not run)"
	}
	t.Notes = []string{"Fixed: the idle bill's items, with the event source's idle long polls reduced by the receives the events make themselves (none are left above about 650,000 receives a month), KMS for three functions' connections (an upper bound), and the happy-path custom metrics (" + countNames(bm.happyMetrics) + "). Batch: " + batchSrc + " at 1, 10 and 100 events/s, interpolated in log rate; below 1 event/s in proportion to the rate, toward one."}
	t.Print(b.out)
}

func (b *benchRun) printLevers(st bench.Stack, bm *billMeasures) {
	base, a := b.variable(st, bm, "3 KB", b.dupRate, 1, targetRate, false)
	nw, dp := bm.profiles("3 KB", 1)
	lv := &bench.MD{Title: fmt.Sprintf("Levers on the variable cost (3 KB, %.0f%% duplicates, HTTP API, 10 events/s on the queue: %s per million deliveries)", b.dupRate*100, usd(base.Total())),
		Header: []string{"lever", "per million deliveries", "saving", "what it costs you"}}
	add := func(name, cost string, n, d bench.Profile, aa bench.Assumptions) {
		c := bench.Cost(n, d, b.dupRate, aa)
		lv.Add(name, usd(c.Total()), usd(base.Total()-c.Total()), cost)
	}
	{ // LOG_LEVEL=warn: no info line per request and per event; the metric lines stay
		n, d := nw, dp
		n.LogBytes, d.LogBytes = 0, 0
		add("LOG_LEVEL=warn (PipelineSettings)", "no info line per request and per event (warnings, errors and metric lines stay)", n, d, a)
	}
	{
		aa := a
		aa.AccessLogBytes = 0
		add("no HTTP API access log", "the record of requests API Gateway answered itself (throttles, 4xx)", nw, dp, aa)
	}
	{
		aa := a
		aa.MemoryMB = 128
		add("128 MB instead of 256 (same durations)", "half the CPU: CPU-bound work (large bodies, your effects) takes longer", nw, dp, aa)
	}
	{
		aa := a
		aa.FunctionURL = true
		add("function URL instead of the HTTP API", "API Gateway's throttling; custom domains need CloudFront (docs/front-door.md)", nw, dp, aa)
	}
	for _, w := range []time.Duration{0, 5 * time.Second} {
		if w == st.BatchWindow {
			continue
		}
		st2 := st
		st2.BatchWindow = w
		aa, _ := b.assume(st2, bm, targetRate, false)
		res := b.esm[esmKey{targetRate, w}]
		delay := "not measured"
		if res.Sent > 0 {
			delay = fmt.Sprintf("processing delay p50 %.1f s, p99 %.1f s (measured)", bench.Percentile(res.Delays, 50)/1000, bench.Percentile(res.Delays, 99)/1000)
		}
		if bb, ok := b.esmBatch(targetRate, w); ok {
			aa.Batch = bb
		}
		add(fmt.Sprintf("BatchWindowSeconds %d instead of %d", int(w/time.Second), int(st.BatchWindow/time.Second)), delay, nw, dp, aa)
	}
	// What the template already does, undone, for scale.
	{
		aa := a
		aa.PlatformLogBytes = platformLogBytes
		add("(already done) keeping Lambda's START/END/REPORT lines", "—", nw, dp, aa)
	}
	{
		n := nw
		n.WCU++
		add("(already done) removing the due-index entry at Complete", "—", n, dp, a)
	}
	lv.Notes = []string{"Each lever alone, the rest as shipped. Negative savings are what the template saves already. Read-before-write for duplicate-heavy sources (an eventually consistent read before the conditional put) would save a write unit per duplicate for half a read unit per delivery and a round trip on every new event: not done (the new-event path stays at two round trips)."}
	lv.Print(b.out)
}

// esmBatch is the measured mean batch at rate with window w.
func (b *benchRun) esmBatch(rate float64, w time.Duration) (float64, bool) {
	r, ok := b.esm[esmKey{rate, w}]
	if !ok || r.Sent == 0 {
		return 0, false
	}
	if w == 0 {
		return 1, true
	}
	return r.MeanBatch(), true
}

func (b *benchRun) printTargets(st bench.Stack, bm *billMeasures) {
	line := func(what string, got, target float64) {
		verdict := "met"
		if got > target {
			verdict = "NOT met"
		}
		fmt.Fprintf(b.out, "Target: %s: $%.2f (target $%.2f): %s\n", what, got, target, verdict)
	}
	fmt.Fprintln(b.out)
	h, _ := b.variable(st, bm, "3 KB", 0.3, 1, targetRate, false)
	u, _ := b.variable(st, bm, "3 KB", 0.3, 1, targetRate, true)
	line("variable cost per million deliveries, 3 KB, 30% duplicates, shipped defaults, at the batch size the template produces at 10 events/s", h.Total(), 4.00)
	line("the same through the function URL", u.Total(), 3.00)
	total, _, _, _ := b.allIn(st, bm, 1e6, 0.3, "HTTP API")
	line("all-in per million deliveries at 1M deliveries a month, shipped defaults", total, 6.00)
	line("fixed cost per month of an idle deployment, shipped defaults", bench.BillTotal(b.fixedBill(st, bm, "HTTP API")), 1.50)
}

func doorName(url bool) string {
	if url {
		return "function URL"
	}
	return "HTTP API"
}

func logf(x float64) float64 { return math.Log(x) }

// countNames is "0" or "2 (A, B)".
func countNames(names []string) string {
	if len(names) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", len(names), strings.Join(names, ", "))
}
