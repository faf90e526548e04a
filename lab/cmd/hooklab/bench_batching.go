package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/lab/bench"
)

// The event source (section batching): the delay from the receiver's 2xx
// to the handler's start, the batches and the empty receives, by traffic
// rate and batching window, measured by the pollers lab/bench plays
// against the emulator's queue (bench.RunESM: MiniStack's own event source
// ignores the window), with the simulation of the same premises beside.

// esmPlan is one rate measured: its windows, and how many queues run side
// by side (each at the rate) for how long, so that a quiet rate still
// yields dozens of messages in minutes.
type esmPlan struct {
	rate    float64 // events a second on each queue
	windows []time.Duration
	streams int
	run     time.Duration
}

var esmPlans = []esmPlan{
	{0.03, []time.Duration{0, time.Second, 2 * time.Second}, 12, 180 * time.Second},
	{0.3, []time.Duration{0, time.Second, 2 * time.Second}, 4, 120 * time.Second},
	{3, []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second}, 1, 60 * time.Second},
	{10, []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second}, 1, 20 * time.Second},
	{30, []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second}, 1, 10 * time.Second},
}

// esmQuiet is the rate below which a plan runs in the background, beside
// the busier ones: its pollers mostly wait.
const esmQuiet = 1.0

// esmHold is how long an invocation holds its poller: about the
// processor's time for a batch with AWS latencies (the cost section
// measures it).
const esmHold = 30 * time.Millisecond

type esmKey struct {
	rate   float64
	window time.Duration
}

func (b *benchRun) batching(ctx context.Context) error {
	st, err := b.readStack()
	if err != nil {
		return err
	}
	raw, err := b.awsConfig(ctx)
	if err != nil {
		return err
	}
	sq := sqs.NewFromConfig(raw)
	b.esm = map[esmKey]bench.ESMResult{}
	var mu sync.Mutex
	var errs []error
	run := func(p esmPlan, w time.Duration, wg *sync.WaitGroup) {
		rs := make([]bench.ESMResult, p.streams)
		var sw sync.WaitGroup
		for i := range p.streams {
			sw.Go(func() {
				r, err := b.esmStream(ctx, sq, p, w, i, st.BatchSize)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%g events/s, window %v: %w", p.rate, w, err))
				}
				rs[i] = r
			})
		}
		sw.Wait()
		mu.Lock()
		b.esm[esmKey{p.rate, w}] = bench.MergeESM(rs)
		mu.Unlock()
		wg.Done()
	}
	var quiet, busy sync.WaitGroup
	for _, p := range esmPlans {
		if p.rate >= esmQuiet {
			continue
		}
		for _, w := range b.esmWindows(p, st) {
			quiet.Add(1)
			go run(p, w, &quiet)
		}
	}
	for _, p := range esmPlans { // one busy rate at a time, its windows side by side
		if p.rate < esmQuiet {
			continue
		}
		fmt.Fprintf(b.log, "bench: batching: %g events/s…\n", p.rate)
		for _, w := range b.esmWindows(p, st) {
			busy.Add(1)
			go run(p, w, &busy)
		}
		busy.Wait()
	}
	fmt.Fprintf(b.log, "bench: batching: waiting for the quiet rates…\n")
	quiet.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	b.printBatching(st)
	return nil
}

// esmWindows are p's windows that the template allows.
func (b *benchRun) esmWindows(p esmPlan, st bench.Stack) []time.Duration {
	var out []time.Duration
	for _, w := range p.windows {
		if slices.Contains(st.WindowChoices, w) {
			out = append(out, w)
		}
	}
	return out
}

// esmStream is one queue of plan p at window w.
func (b *benchRun) esmStream(ctx context.Context, sq *sqs.Client, p esmPlan, w time.Duration, i, batchSize int) (bench.ESMResult, error) {
	name := awstest.Name("bench-esm")
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: &name, Attributes: map[string]string{"VisibilityTimeout": "180"}})
	if err != nil {
		return bench.ESMResult{}, err
	}
	defer sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
	seed := uint64(p.rate*1000) ^ uint64(w/time.Millisecond)<<20 ^ uint64(i+1)<<40
	return bench.RunESM(ctx, sq, *q.QueueUrl, bench.ESMConfig{Rate: p.rate, For: time.Duration(float64(p.run) * b.esmScale),
		Window: w, BatchSize: batchSize, Hold: esmHold, Seed: seed})
}

// esmModel is the simulation of the same premises at rate and window.
func esmModel(rate float64, w time.Duration, st bench.Stack) bench.ESMModel {
	horizon := time.Duration(math.Max(2e4/rate, 3600)) * time.Second // about 20,000 events, at least an hour
	return bench.ModelESM(rate, w, st.BatchSize, bench.ESMPollers, esmHold, horizon, 1)
}

func secs(ms float64) string { return fmt.Sprintf("%.2f", ms/1000) }

func (b *benchRun) printBatching(st bench.Stack) {
	lat := &bench.MD{Title: fmt.Sprintf("Handler start delay: from the receiver's 2xx to the processor's start, s (BatchWindowSeconds %d, the template's default; measured against the emulator's queue)", int(st.BatchWindow/time.Second)),
		Header: []string{"events/s on the queue", "deliveries a month (30% duplicates)", "messages", "p50", "p99", "model p50", "model p99"}}
	for _, p := range esmPlans {
		r, ok := b.esm[esmKey{p.rate, st.BatchWindow}]
		if !ok {
			continue
		}
		m := esmModel(p.rate, st.BatchWindow, st)
		lat.Add(bench.Num(p.rate), bench.Num(queueDeliveries(p.rate, 0.3)/1e6)+"M", r.Sent,
			secs(bench.Percentile(r.Delays, 50)), secs(bench.Percentile(r.Delays, 99)), secs(m.P50), secs(m.P99))
	}
	lat.Notes = []string{"Not included: Lambda's own invoke overhead (a few ms warm) and a cold start's init (the cold-start section). " +
		"The emulator looks for messages every 100 ms during a long poll, so a measured delay can be up to 0.1 s longer than SQS's, which answers a long poll as soon as a message is there; the model has no such step."}
	lat.Print(b.out)

	t := &bench.MD{Title: fmt.Sprintf("The event source by rate and window (BatchSize %d, %d pollers; measured against the emulator's queue, steady state; model: the same premises simulated)", st.BatchSize, bench.ESMPollers),
		Header: []string{"events/s", "window", "queues × s", "messages", "mean batch", "model", "delay p50 s", "p99 s", "model p50 s", "model p99 s", "empty receives/s", "model", "receives/event (emulator)"}}
	for _, p := range esmPlans {
		for _, w := range b.esmWindows(p, st) {
			r, ok := b.esm[esmKey{p.rate, w}]
			if !ok {
				continue
			}
			m := esmModel(p.rate, w, st)
			ws := fmt.Sprintf("%d s", int(w/time.Second))
			if w == st.BatchWindow {
				ws += " (template)"
			}
			t.Add(bench.Num(p.rate), ws, fmt.Sprintf("%d × %.0f", p.streams, p.run.Seconds()*b.esmScale), r.Sent, r.MeanBatch(), m.Batch,
				secs(bench.Percentile(r.Delays, 50)), secs(bench.Percentile(r.Delays, 99)), secs(m.P50), secs(m.P99),
				r.EmptyPerSecond(), m.EmptyPerSecond, r.ReceivesPerEvent())
		}
	}
	t.Notes = []string{
		"The bench plays the event source's pollers against the emulator's SQS queue (lab/bench/esm.go), because MiniStack's own event source invokes with whatever one receive returns and ignores MaximumBatchingWindowInSeconds. " +
			"Premises, from AWS's documentation: five pollers (with a maximum concurrency set, as the template does, the event source never goes below five); each long-polls (20 s) and, with a window, goes on polling until the window is over or the batch is full, so that at very low traffic the poll under way when the window ends holds the batch up to 20 s (\"If you're using a batch window and your SQS queue contains very low traffic, Lambda might wait for up to 20 seconds before invoking your function. This is true even if you set a batch window lower than 20 seconds\", docs.aws.amazon.com/lambda/latest/dg/with-sqs.html); an invocation holds its poller " +
			fmt.Sprint(esmHold) + " and ends with one DeleteMessageBatch. Messages arrive as Poisson streams (fixed seeds), on several queues side by side at the quiet rates; each stream goes on, unmeasured, until its last measured message reached an invocation.",
		"Empty receives: long polls that ran out with nothing, a second, for one queue's pollers (idle: 5 per 20 s, 0.25/s); the all-in bill prices them by rate. Receives per event: those that carried messages; the emulator's 100 ms polling hands several messages to one receive at 10 events/s and more; SQS answers a long poll as soon as a message is there, so on AWS it is about one receive per event, which the cost model counts (the larger of one and the measured figure).",
	}
	lost := 0
	for _, r := range b.esm {
		lost += r.Lost
	}
	if lost > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d measured messages never reached an invocation: the emulator cut a receive's answer short (the SDK reports a checksum error) and kept what it had handed out invisible; they are left out.", lost))
	}
	t.Print(b.out)
}

// queueDeliveries is the deliveries a month that put rate events a second
// on the queue.
func queueDeliveries(rate, dupRate float64) float64 {
	return rate * bench.Month.Seconds() / (1 - dupRate)
}

// esmAt is what the event source makes at rate with window w: mean batch,
// receives per event and empty receives a second. Between measured rates,
// interpolated in log rate; below the quietest, toward batches of one and
// idle pollers (0.25 empty receives a second) in proportion to the rate;
// above the busiest, the busiest's. Without the batching section, the
// model. Window 0: batches of one (the emulator's 100 ms polling merges a
// few messages SQS would hand out one by one).
func (b *benchRun) esmAt(rate float64, w time.Duration, st bench.Stack) (batch, receives, empty float64, measured bool) {
	var rates []float64
	for _, p := range esmPlans {
		if _, ok := b.esm[esmKey{p.rate, w}]; ok {
			rates = append(rates, p.rate)
		}
	}
	point := func(r float64) (float64, float64, float64) {
		res := b.esm[esmKey{r, w}]
		bt := res.MeanBatch()
		if w == 0 {
			bt = 1
		}
		return bt, max(1, res.ReceivesPerEvent()), res.EmptyPerSecond()
	}
	if len(rates) == 0 {
		m := esmModel(rate, w, st)
		return m.Batch, max(1, m.ReceivesPerEvent), m.EmptyPerSecond, false
	}
	idle := float64(bench.ESMPollers) / bench.ESMLongPoll.Seconds()
	if lo := rates[0]; rate <= lo {
		bl, rl, el := point(lo)
		f := rate / lo
		return 1 + (bl-1)*f, rl, idle + (el-idle)*f, true
	}
	if hi := rates[len(rates)-1]; rate >= hi {
		bh, rh, eh := point(hi)
		return bh, rh, eh, true
	}
	for i := 1; i < len(rates); i++ {
		lo, hi := rates[i-1], rates[i]
		if rate > hi {
			continue
		}
		bl, rl, el := point(lo)
		bh, rh, eh := point(hi)
		f := (math.Log(rate) - math.Log(lo)) / (math.Log(hi) - math.Log(lo))
		return bl + (bh-bl)*f, rl + (rh-rl)*f, el + (eh-el)*f, true
	}
	bt, r, e := point(rate)
	return bt, r, e, true
}

func (b *benchRun) readStack() (bench.Stack, error) {
	if b.stack != nil {
		return *b.stack, nil
	}
	st, err := bench.ReadStack("template.yaml")
	if err != nil {
		return st, fmt.Errorf("%w (run from the repository root)", err)
	}
	b.stack = &st
	return st, nil
}
