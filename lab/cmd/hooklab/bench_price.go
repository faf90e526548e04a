package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/ledger"
)

// Pricing (section cost): the bill from what measureBill measured, at list
// prices, by traffic, body size, duplicates and steps; the fixed cost; the
// levers; the targets.

// billRates are the monthly volumes the all-in bill is for.
var billRates = []float64{100e3, 1e6, 10e6, 100e6}

// targetRate is the traffic the variable-cost targets are priced at:
// events a second on the queue.
const targetRate = 10.0

// The setting performance.md tells a user to change with traffic: the
// template's BatchWindowSeconds below busyRate events a second on the
// queue, busyWindow from there. The bill prices each rate at it.
const (
	busyRate   = 10.0
	busyWindow = time.Second
)

// windowAt is the batching window performance.md advises at rate.
func windowAt(rate float64, st bench.Stack) time.Duration {
	if rate >= busyRate {
		return busyWindow
	}
	return st.BatchWindow
}

// queueRate is the events a second reaching the queue at deliveries a month.
func queueRate(deliveries, dupRate float64) float64 {
	return deliveries * (1 - dupRate) / bench.Month.Seconds()
}

// assume is the model's premises for the template at rate events a second
// on the queue with batching window w, through the given front door.
func (b *benchRun) assume(st bench.Stack, bm *billMeasures, rate float64, w time.Duration, functionURL bool) (bench.Assumptions, bool) {
	batch, receives, _, measured := b.esmAt(rate, w, st)
	a := bench.Assumptions{MemoryMB: st.MemoryMB, ProcessorMB: st.ProcessorMB, RetentionDays: ledger.DefaultRetention.Hours() / 24, LogRetentionDays: float64(st.LogRetentionDays),
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
	idleMS := bench.LambdaMS(idle.ms, idle.cpuMS, st.MemoryMB)
	lambda := bench.PriceLambdaRequests.USD/1e6 + math.Ceil(idleMS)/1000*gb*bench.PriceLambdaArm.USD
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
		billItem("reclaimer: invocations and duration", fmt.Sprintf("%.0f runs, %.0f ms each at %d MB", runs, idleMS, st.MemoryMB), runs*lambda, "ReclaimSchedule; an idle run's time with AWS latencies and its CPU time at the memory's share of a vCPU (measured)"),
		billItem("reclaimer: DynamoDB", fmt.Sprintf("%.1f WCU + %.1f RCU a run", idle.u.WCU, idle.u.RCU), runs*dynamo, "an idle run: "+strings.Join(ops, ", ")+" (measured)"),
		billItem("reclaimer: SQS", fmt.Sprintf("%.0f requests a run", sqsReq), runs*sqsReq*bench.PriceSQS.USD/1e6, "its queue-depth read and dead-letter receive (measured)"),
		billItem("reclaimer: logs", fmt.Sprintf("%.0f B a run", idle.logBytes+idle.metricBytes), runs*logs, "its run line (measured); Lambda's own lines "+map[bool]string{true: "kept", false: "dropped (SystemLogLevel " + st.SystemLogLevel + ")"}[st.PlatformLines()]),
		billItem("event source: idle long polls", fmt.Sprintf("%d pollers × one 20 s poll: %.0f requests", bench.ESMPollers, polls), polls*bench.PriceSQS.USD/1e6, "five pollers while the queue is empty (the batching section's premises); traffic turns some into receives that carry messages (the all-in bill)"),
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
// the event source makes at that rate with the window performance.md
// advises there, the fixed items, and the long polls that still come back
// empty at that rate (priced in place of the idle ones).
func (b *benchRun) allIn(st bench.Stack, bm *billMeasures, deliveries, dupRate float64, door string) (total, variable, fixed, batch, empties float64) {
	rate := queueRate(deliveries, dupRate)
	w := windowAt(rate, st)
	a, _ := b.assume(st, bm, rate, w, door == "function URL")
	nw, dp := bm.profiles("3 KB", 1)
	v := bench.Cost(nw, dp, dupRate, a).Scale(deliveries)
	variable = v.Total()
	_, _, perSecond, _ := b.esmAt(rate, w, st)
	empties = perSecond * bench.Month.Seconds()
	for _, it := range b.fixedBill(st, bm, door) {
		if it.What == "event source: idle long polls" {
			it.USD = empties * bench.PriceSQS.USD / 1e6
		}
		if strings.HasPrefix(it.What, "KMS") {
			it.USD *= 3 // three functions' connections, each at most once per five minutes
		}
		fixed += it.USD
	}
	fixed += float64(len(bm.happyMetrics)) * bench.PriceCustomMetric.USD // traffic every hour keeps them on
	return variable + fixed, variable, fixed, a.Batch, empties
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

	batchSrc := "measured (batching section)"
	if _, _, _, measured := b.esmAt(targetRate, busyWindow, st); !measured {
		batchSrc = "the event source model (the batching section did not run)"
	}
	stack := &bench.MD{Title: "The deployment priced (read from template.yaml)", Header: []string{"setting", "value"}}
	stack.Add("event source", fmt.Sprintf("BatchSize %d, BatchWindowSeconds %d (default; %d from %g events/s on the queue, as performance.md advises), %d pollers, ProcessorConcurrency %d",
		st.BatchSize, int(st.BatchWindow/time.Second), int(busyWindow/time.Second), busyRate, bench.ESMPollers, st.Concurrency))
	stack.Add("functions", fmt.Sprintf("%d MB arm64, the processor %d MB (%.3f and %.3f vCPU: CPU time measured here is stretched %.1f× and %.1f×); Lambda's own log lines %s", st.MemoryMB, st.ProcessorMB,
		float64(st.MemoryMB)/bench.LambdaMBPerVCPU, float64(st.ProcessorMB)/bench.LambdaMBPerVCPU, bench.LambdaMBPerVCPU/float64(st.MemoryMB), bench.LambdaMBPerVCPU/float64(st.ProcessorMB),
		map[bool]string{true: "kept", false: "dropped (SystemLogLevel " + st.SystemLogLevel + ")"}[st.PlatformLines()]))
	stack.Add("ledger", fmt.Sprintf("on demand; %g-day retention (ledger.DefaultRetention); PITR %v; KMS (AWS managed key) %v", ledger.DefaultRetention.Hours()/24, st.PITR, st.KMSTable))
	stack.Add("logs", fmt.Sprintf("%d-day retention; the HTTP API's access log line %d B (its format with typical values)", st.LogRetentionDays, len(st.AccessLogLine())))
	stack.Add("alarms", fmt.Sprintf("%d with the HTTP API, %d with the function URL, %d with both", st.AlarmsWith("HasHttpApi"), st.AlarmsWith("HasFunctionUrl"), st.AlarmsWith("HasHttpApi", "HasFunctionUrl", "HasBothFrontDoors")))
	stack.Add("dashboard", map[bool]string{true: "always", false: "only when " + st.DashboardCondition + " (the prod stage)"}[st.DashboardCondition == ""])
	stack.Add("happy-path custom metrics", countNames(bm.happyMetrics)+" — measured in the handlers' output")
	stack.Add("batch sizes, empty receives", batchSrc)
	stack.Print(b.out)

	// Each size's delivery, measured.
	sz := &bench.MD{Title: fmt.Sprintf("Per delivery, shipped defaults (payload on-trouble), measured against the emulator; ms with AWS latencies injected, median of %d (CPU ms: its CPU time on a full core here)", bm.samples),
		Header: []string{"body", "needs", "new: WCU", "new: RCU", "SQS chunks", "log B (metric B)", "table B kept", "receiver ms (CPU)", "processor ms (CPU)", "duplicate: WCU", "duplicate ms (CPU)", "duplicate of a received event: WCU", "table B kept"}}
	for _, s := range bm.sizes {
		sz.Add(s.label, s.needs, s.newEv.WCU, s.newEv.RCU, s.newEv.SQSChunks, fmt.Sprintf("%.0f (%.0f)", s.newEv.LogBytes, s.newEv.MetricBytes),
			s.newEv.TableBytes, msCPU(s.newEv.ReceiverMS, s.newEv.ReceiverCPUMS), msCPU(s.newEv.ProcessorMS, s.newEv.ProcessorCPUMS), s.dup.WCU, msCPU(s.dup.ReceiverMS, s.dup.ReceiverCPUMS),
			s.dupRecv.WCU, s.dupRecv.TableBytes)
	}
	sz.Notes = []string{fmt.Sprintf("WCU: table and due index, receiver and processor (claim, complete): a new event writes the due index once, at Create; done records keep their entry, which the reclaimer reads (%.2f RCU per entry over two runs in one process, measured: an eventually consistent read when it falls due, its share of the queries; the second run, which reads it again because each run's mark trails its start by the lag, passed %.0f%% of them on the first's word; a run in a fresh container reads them again) — added to the new event in the tables below. "+
		"A duplicate that finds its record still received (its first delivery not yet processed) stores the payload before answering, so that the event can be re-driven whatever happened to the first receiver. "+
		"Processor invocation with AWS latencies: %.1f ms for one event, %.1f ms for ten run side by side (3 KB; the model interpolates by batch size). "+
		"Steps: each step beyond the first adds %.0f WCU and %.1f ms (two steps), %.0f WCU and %.1f ms (three).",
		bm.doneRCU, 100*bm.doneKnown, bm.batchMS[0], bm.batchMS[1], bm.steps[2][0], bm.steps[2][1], bm.steps[3][0], bm.steps[3][1])}
	sz.Print(b.out)

	b.printVariable(st, bm)
	b.printFixed(st, bm)
	b.printAllIn(st, bm)
	b.printExtras(st, bm)
	b.printLevers(st, bm)
	b.printTargets(st, bm)
}

func msCPU(ms, cpu float64) string { return fmt.Sprintf("%s (%s)", bench.Num(ms), bench.Num(cpu)) }

// variable prices a million deliveries of label with dupRate duplicates
// and steps steps at rate events/s on the queue, at the window advised
// there.
func (b *benchRun) variable(st bench.Stack, bm *billMeasures, label string, dupRate float64, steps int, rate float64, functionURL bool) (bench.Breakdown, bench.Assumptions) {
	a, _ := b.assume(st, bm, rate, windowAt(rate, st), functionURL)
	nw, dp := bm.profiles(label, steps)
	return bench.Cost(nw, dp, dupRate, a), a
}

// variableRates are the rates the variable cost is shown at.
var variableRates = []float64{0.3, 3, 10, 30}

func (b *benchRun) printVariable(st bench.Stack, bm *billMeasures) {
	t := &bench.MD{Title: fmt.Sprintf("Variable cost per million deliveries, 3 KB, %.0f%% duplicates, at the batch the event source makes with the window performance.md advises", b.dupRate*100),
		Header: []string{"events/s on the queue", "window", "front door", "batch", "API GW", "Lambda", "DynamoDB", "SQS", "Logs", "total"}}
	for _, rate := range variableRates {
		for _, url := range []bool{false, true} {
			c, a := b.variable(st, bm, "3 KB", b.dupRate, 1, rate, url)
			t.Add(bench.Num(rate), fmt.Sprintf("%d s", int(windowAt(rate, st)/time.Second)), doorName(url), a.Batch, usd(c.APIGateway), usd(c.Lambda), usd(c.DynamoDB), usd(c.SQS), usd(c.Logs), usd(c.Total()))
		}
	}
	t.Notes = []string{"A delivery is one POST to the receiver; duplicates never reach the queue, so 10 events/s on the queue is about 14 deliveries/s at 30% duplicates (37M deliveries a month). " +
		"Lambda: the measured handler times with AWS latencies, their CPU time stretched to the memory's share of a vCPU, billed per started ms, and one processor invocation per batch; SQS: send, about one receive per event (SQS answers a long poll with the first message there: the larger of one and the emulator's measured count), one DeleteMessageBatch per batch; " +
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
	byDup.Notes = []string{"A duplicate of a processed event is one failed conditional put (1 WCU), no queue message, no processor; the share of the batch-bound costs is that of the events that do reach the queue."}
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
	t := &bench.MD{Title: fmt.Sprintf("All-in monthly bill: 3 KB, %.0f%% duplicates, the window performance.md advises at each rate (the default below %g events/s), the rest as shipped", b.dupRate*100, busyRate),
		Header: []string{"deliveries/month", "front door", "events/s on the queue", "window", "batch", "empty receives", "variable", "fixed", "total", "per million deliveries"}}
	for _, n := range billRates {
		for _, door := range []string{"HTTP API", "function URL"} {
			total, v, f, batch, empties := b.allIn(st, bm, n, b.dupRate, door)
			rate := queueRate(n, b.dupRate)
			t.Add(fmt.Sprintf("%.0fk", n/1e3), door, fmt.Sprintf("%.3g", rate), fmt.Sprintf("%d s", int(windowAt(rate, st)/time.Second)), batch,
				fmt.Sprintf("%.0fk", empties/1e3), usd(v), usd(f), usd(total), usd(total/n*1e6))
		}
	}
	src := "the batching section's measurements"
	if _, _, _, measured := b.esmAt(0.3, st.BatchWindow, st); !measured {
		src = "the event source model (the batching section did not run)"
	}
	t.Notes = []string{"Fixed: the idle bill's items, KMS for three functions' connections (an upper bound), the happy-path custom metrics (" + countNames(bm.happyMetrics) + "), and in place of the idle long polls the receives that still come back empty at the rate: a poller whose 20 s poll runs out before a message reaches it makes one, so below about 3 events/s some remain. " +
		"Batch and empty receives: " + src + ", interpolated in log rate; below the quietest rate measured, in proportion to the rate toward batches of one and idle pollers."}
	t.Print(b.out)
}

func doorName(url bool) string {
	if url {
		return "function URL"
	}
	return "HTTP API"
}

// countNames is "0" or "2 (A, B)".
func countNames(names []string) string {
	if len(names) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", len(names), strings.Join(names, ", "))
}
