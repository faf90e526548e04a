package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"time"

	"github.com/hookledger/hookledger/internal/engine"

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
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
)

// The bill (section cost): what a deployment of the template costs a month,
// fixed and variable, measured against the emulator with AWS latencies
// injected for the durations, priced at list prices, and the targets.

// billSize is one body size's delivery, under the shipped defaults: a new
// event, a duplicate of a done one, and a duplicate that finds its record
// still received (its first delivery not yet processed).
type billSize struct {
	label               string
	size                int
	needs               string // what the size needs beyond the defaults
	newEv, dup, dupRecv bench.Profile
}

// billIdle is one reclaimer run with nothing to do.
type billIdle struct {
	calls       map[string]int
	u           units.Usage
	logBytes    float64
	metricBytes float64
	ms, cpuMS   float64 // with AWS latencies; its CPU time
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
	// guardNew and guardDup are what the replay guard adds to a new event
	// and to a duplicate (source.GuardByDefault; bench_guard.go).
	guardNew, guardDup bench.Profile
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
func indexEntryBytes(id ledger.Key) float64 {
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
	var idleMS, idleCPU []float64
	for range 5 {
		t0, c0 := time.Now(), bench.CPUTime()
		if _, err := ht.rec.Handle(ctx, nil); err != nil {
			return nil, err
		}
		idleCPU = append(idleCPU, float64((bench.CPUTime()-c0).Microseconds())/1000)
		idleMS = append(idleMS, msSince(t0))
	}
	out.idle.ms, out.idle.cpuMS = bench.Median(idleMS), bench.Median(idleCPU)
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
	// (An event the emulator failed during the timing, left received and
	// not yet due, is postponed by the first run and not read again.)
	if looks[0].Scanned == 0 || looks[0].Redriven() > 0 || looks[1].Scanned != looks[0].Scanned-looks[0].Postponed {
		return nil, fmt.Errorf("the reclaimer's looks at done records: %+v, then %+v (want the same entries read twice)", looks[0], looks[1])
	}
	out.doneRCU = max(0, u.RCU-2*out.idle.u.RCU) / float64(looks[0].Scanned)
	out.doneKnown = float64(looks[1].Known) / float64(looks[1].Scanned)
	hi.logs.take()

	// Last, as its events stay received: the replay guard.
	if out.guardNew, out.guardDup, err = b.guardDeltas(ctx, env, counted, timed, acc); err != nil {
		return nil, fmt.Errorf("replay guard: %w", err)
	}
	return out, nil
}

// measureSize measures one body's new delivery, processing and duplicate
// with the request meter and the unit accountant.
func (b *benchRun) measureSize(ctx context.Context, h *billHandlers, sq *sqs.Client, queueURL string, body []byte, m *awstest.Meter, acc *units.Accountant) (billSize, error) {
	req := benchRequest(body)
	m.Reset()
	acc.Take()
	h.logs.take()
	if resp, _ := h.rcv.Handle(ctx, req); resp.Headers["X-Hookledger-Result"] != string(receiver.Accepted) {
		return billSize{}, fmt.Errorf("receiver answered %d %s, want accepted", resp.StatusCode, resp.Headers["X-Hookledger-Result"])
	}
	newCalls, uNew := m.Snapshot(), acc.Take()
	logNew, metNew := h.logs.take()
	if resp, _ := h.rcv.Handle(ctx, req); resp.Headers["X-Hookledger-Result"] != string(receiver.Duplicate) {
		return billSize{}, fmt.Errorf("duplicate of a received event answered %d %s", resp.StatusCode, resp.Headers["X-Hookledger-Result"])
	}
	uRecv := acc.Take()
	logRecv, metRecv := h.logs.take()
	id := bodyID(body)
	batch, err := receiveKey(ctx, sq, queueURL, id.ID)
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
		SQSSend: uNew.SQS, SQSChunks: units.SQSRequests(msg),
		LogBytes: logNew + logProc, MetricBytes: metNew + metProc,
		TableBytes: table, IndexBytes: indexEntryBytes(id), BodyBytes: float64(len(body)),
		S3Puts: float64(newCalls["S3.PutObject"]), S3Gets: float64(procCalls["S3.GetObject"]),
	}
	if s.newEv.S3Puts > 0 {
		s.newEv.S3Bytes = float64(len(body))
	}
	s.dup = bench.Profile{WCU: uDup.WCU + uDup.IndexWCU, RCU: uDup.RCU, SQSSend: uDup.SQS, LogBytes: logDup, MetricBytes: metDup, BodyBytes: float64(len(body))}
	s.dupRecv = bench.Profile{WCU: uRecv.WCU + uRecv.IndexWCU, RCU: uRecv.RCU, SQSSend: uRecv.SQS, LogBytes: logRecv, MetricBytes: metRecv, BodyBytes: float64(len(body))}
	for _, w := range uRecv.Written {
		s.dupRecv.TableBytes += float64(w) + 100 // the payload it stored
	}
	return s, nil
}

// bodyID is the ledger id of a bench Stripe body.
func bodyID(body []byte) ledger.Key {
	var ev struct {
		ID string `json:"id"`
	}
	json.Unmarshal(body, &ev)
	return ledger.Key{Source: "stripe", Tenant: "acme", ID: ev.ID}
}

// receiveKey takes the message of the event key off the queue (and drops
// any other: a copy an earlier step left, sent twice by the SDK when the
// emulator cut a send's answer short).
func receiveKey(ctx context.Context, sq *sqs.Client, queueURL, key string) (events.SQSEvent, error) {
	for range 5 {
		batch, err := receiveOne(ctx, sq, queueURL)
		if err != nil {
			return batch, err
		}
		if m, err := queue.Decode(batch.Records[0].Body); err == nil && m.ID == key {
			return batch, nil
		}
	}
	return events.SQSEvent{}, fmt.Errorf("no message of %s on the queue", key)
}

// timeSize times the same three steps with AWS latencies injected: medians
// of the bill's samples.
func (b *benchRun) timeSize(ctx context.Context, h *billHandlers, sq *sqs.Client, queueURL string, size int, s *billSize) error {
	var tNew, tRecv, tProc, tDup, cNew, cRecv, cProc, cDup []float64
	timed := func(ms, cpu *[]float64, f func()) {
		t0, c0 := time.Now(), bench.CPUTime()
		f()
		*cpu = append(*cpu, float64((bench.CPUTime()-c0).Microseconds())/1000)
		*ms = append(*ms, msSince(t0))
	}
	n := b.billSamples
	if size > config.MaxBodyLimit {
		n = max(5, n/4) // 2 MB bodies through S3: fewer, slower samples
	}
	for tries := 0; len(tNew) < n; tries++ {
		if tries >= 2*n {
			return fmt.Errorf("%d of %d samples: the emulator failed the rest", len(tNew), n)
		}
		var body []byte
		if size > config.MaxBodyLimit {
			body = largeBody("evt_billt_"+cli.RandomHex(8), size)
		} else {
			body = testbody.JSON("evt_billt_"+cli.RandomHex(8), size)
		}
		req := benchRequest(body)
		// A sample the emulator failed (an answer other than accepted, a
		// message it lost) is dropped and taken again.
		var resp events.APIGatewayV2HTTPResponse
		t0, c0 := time.Now(), bench.CPUTime()
		resp, _ = h.rcv.Handle(ctx, req)
		cpu, ms := float64((bench.CPUTime()-c0).Microseconds())/1000, msSince(t0)
		if resp.Headers["X-Hookledger-Result"] != string(receiver.Accepted) {
			continue
		}
		batch, err := receiveKey(ctx, sq, queueURL, bodyID(body).ID)
		if err != nil {
			continue
		}
		tNew, cNew = append(tNew, ms), append(cNew, cpu)
		timed(&tRecv, &cRecv, func() { h.rcv.Handle(ctx, req) })
		timed(&tProc, &cProc, func() { h.proc.Handle(ctx, batch) })
		timed(&tDup, &cDup, func() { h.rcv.Handle(ctx, req) })
	}
	h.logs.take()
	med := bench.Median
	s.newEv.ReceiverMS, s.newEv.ProcessorMS, s.dup.ReceiverMS, s.dupRecv.ReceiverMS = med(tNew), med(tProc), med(tDup), med(tRecv)
	s.newEv.ReceiverCPUMS, s.newEv.ProcessorCPUMS, s.dup.ReceiverCPUMS, s.dupRecv.ReceiverCPUMS = med(cNew), med(cProc), med(cDup), med(cRecv)
	return nil
}

// queueBatch sends n 3 KB events through h's receiver and takes their n
// messages off the queue as one batch.
func (b *benchRun) queueBatch(ctx context.Context, h *billHandlers, sq *sqs.Client, queueURL string, n int) (events.SQSEvent, error) {
	sent := map[string]bool{}
	for range n {
		key := "evt_billb_" + cli.RandomHex(8)
		if resp, _ := h.rcv.Handle(ctx, benchRequest(testbody.JSON(key, 3<<10))); resp.StatusCode != 200 {
			return events.SQSEvent{}, fmt.Errorf("receiver answered %d", resp.StatusCode)
		}
		sent[key] = true
	}
	h.logs.take()
	// One message per event, and only the events just sent: the emulator
	// sometimes cuts a send's answer short after queueing the message, and
	// the SDK sends it again. Two copies of one event in a batch would race
	// for its lease, and a copy left by an earlier step (a 2 MB event's, say)
	// is not what this batch measures.
	var batch events.SQSEvent
	seen := map[string]bool{}
	for tries := 0; len(batch.Records) < n && tries < 20; tries++ {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: int32(n - len(batch.Records)), WaitTimeSeconds: 1, MessageSystemAttributeNames: esmAttributes})
		if err != nil {
			return batch, err
		}
		for _, msg := range out.Messages {
			sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: msg.ReceiptHandle})
			m, err := queue.Decode(aws.ToString(msg.Body))
			if err != nil || seen[m.ID] || !sent[m.ID] {
				continue
			}
			seen[m.ID] = true
			batch.Records = append(batch.Records, esmMessage(msg))
		}
	}
	if len(batch.Records) < n {
		return batch, fmt.Errorf("took %d of %d messages off the queue", len(batch.Records), n)
	}
	return batch, nil
}

// measureSteps measures handlers of 1, 2 and 3 no-op steps: the processor's
// write units and its time with AWS latencies, each over a step's worth.
func (b *benchRun) measureSteps(ctx context.Context, env *benchEnv, counted, timed aws.Config, m *awstest.Meter, acc *units.Accountant, out *billMeasures) error {
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
		id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_steps_" + cli.RandomHex(8)}
		typ := fmt.Sprintf("steps.%d", n)
		if _, _, err := plain.Create(ctx, ledger.NewEvent{Key: id, Type: typ, BodySHA256: "x"}); err != nil {
			return events.SQSEvent{}, err
		}
		body, err := queue.Encode(queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: typ, SHA256: "x", Body: []byte(`{}`)})
		return events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-" + id.ID, Body: body}}}, err
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
