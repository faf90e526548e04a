package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/lab/bench"
)

// The event source's batching (section batching): batch sizes, receive
// requests and the delay a window adds, at 1, 10 and 100 events a second,
// with the template's window and without, and every allowed window at 10
// events a second, measured by the pollers lab/bench plays against the
// emulator's queue (bench.RunESM: MiniStack's own event source ignores the
// window).

// esmRates are the arrival rates measured, events a second on the queue.
var esmRates = []float64{1, 10, 100}

// esmHold is how long an invocation holds its poller in the mimic: about
// the processor's time for a batch with AWS latencies (the cost section
// measures it).
const esmHold = 30 * time.Millisecond

type esmKey struct {
	rate   float64
	window time.Duration
}

// esmFor is how long messages arrive at rate: long enough for a few dozen
// batches at each rate.
func esmFor(rate float64, scale float64) time.Duration {
	d := map[float64]time.Duration{1: 40 * time.Second, 10: 20 * time.Second, 100: 8 * time.Second}[rate]
	if d == 0 {
		d = 20 * time.Second
	}
	return time.Duration(float64(d) * scale)
}

func (b *benchRun) batching(ctx context.Context) error {
	st, err := b.readStack()
	if err != nil {
		return err
	}
	windows := []time.Duration{0}
	for _, w := range st.WindowChoices {
		if w > 0 && w <= 10*time.Second {
			windows = append(windows, w)
		}
	}
	var runs []esmKey
	for _, rate := range esmRates {
		if rate == 10 {
			for _, w := range windows {
				runs = append(runs, esmKey{rate, w})
			}
			continue
		}
		runs = append(runs, esmKey{rate, 0}, esmKey{rate, st.BatchWindow})
	}
	b.esm = map[esmKey]bench.ESMResult{}
	raw, err := b.awsConfig(ctx)
	if err != nil {
		return err
	}
	sq := sqs.NewFromConfig(raw)
	for i, k := range runs {
		if _, ok := b.esm[k]; ok {
			continue
		}
		name := "bench-esm-" + fmt.Sprint(i) + "-" + awstest.Name("q")
		q, dlq, err := queue.CreateQueues(ctx, sq, queue.QueueSpec{Name: name, VisibilityTimeout: 180, MaxReceiveCount: 5})
		if err != nil {
			return err
		}
		fmt.Fprintf(b.log, "bench: batching: %g events/s, window %v…\n", k.rate, k.window)
		r, err := bench.RunESM(ctx, sq, q, bench.ESMConfig{Rate: k.rate, For: esmFor(k.rate, b.esmScale), Window: k.window,
			BatchSize: st.BatchSize, Hold: esmHold, Seed: uint64(i + 1)})
		sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &q})
		sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &dlq})
		if err != nil {
			return fmt.Errorf("%g events/s, window %v: %w", k.rate, k.window, err)
		}
		b.esm[k] = r
	}
	t := &bench.MD{Title: fmt.Sprintf("Batching: the event source's batches at 1, 10 and 100 events/s (BatchSize %d, %d pollers; measured against the emulator's queue, steady state)", st.BatchSize, bench.ESMPollers),
		Header: []string{"events/s", "window", "messages", "batches", "mean batch", "model", "receives/event (emulator)", "empty receives", "delay p50 ms", "delay p99 ms"}}
	for _, k := range runs {
		r := b.esm[k]
		w := fmt.Sprintf("%d s", int(k.window/time.Second))
		if k.window == st.BatchWindow {
			w += " (template)"
		}
		t.Add(bench.Num(k.rate), w, r.Sent, len(r.Sizes), r.MeanBatch(), bench.ModelBatch(k.rate, k.window, st.BatchSize, bench.ESMPollers),
			r.PerMessage(r.Receives), r.Empty, bench.Percentile(r.Delays, 50), bench.Percentile(r.Delays, 99))
	}
	t.Notes = []string{
		"The bench plays the event source's pollers against the emulator's SQS queue (lab/bench/esm.go), because MiniStack's own event source invokes with whatever one receive returns and ignores MaximumBatchingWindowInSeconds. " +
			"Premises, from AWS's documentation: five pollers (the event source starts with five and, with a maximum concurrency set as the template does, never goes below five); each long-polls (20 s) and, with a window, goes on polling until the window is over or the batch is full, so that at very low traffic the poll under way when the window ends holds the batch up to 20 s (\"even if you set a batch window lower than 20 seconds\"); an invocation holds its poller " +
			fmt.Sprint(esmHold) + " and ends with one DeleteMessageBatch. Messages arrive as a Poisson stream (fixed seeds); the stream goes on, unmeasured, until the last measured message reached an invocation.",
		"Delay: from a message's send to its batch's invocation, so the processing delay the window adds (the sender's answer does not wait for it). Model: mean batch of the same premises without the emulator (a Poisson share of the rate per poller during the window, capped at the batch size).",
		"Receives per event: the emulator looks for messages every 100 ms during a long poll, so at 10 events/s and more it hands several to one receive; SQS answers a long poll as soon as a message is there, so on AWS it is about one receive per event at these rates. The cost model counts the larger of one and the measured figure.",
	}
	t.Print(b.out)
	return nil
}

// batchAt is the batch size and receives per event the template's event
// source produces at rate events/s on the queue: measured at 1, 10 and
// 100 events/s (the template's window), interpolated in log rate between,
// the measurement at 1 event/s below it (batches of about one there) and
// at 100 above it (full batches). Without the batching section, the model.
func (b *benchRun) batchAt(rate float64, st bench.Stack) (batch, receives float64, measured bool) {
	point := func(r float64) (float64, float64, bool) {
		res, ok := b.esm[esmKey{r, st.BatchWindow}]
		if !ok {
			return bench.ModelBatch(r, st.BatchWindow, st.BatchSize, bench.ESMPollers), 1, false
		}
		return res.MeanBatch(), max(1, res.PerMessage(res.Receives)), true
	}
	if st.BatchWindow == 0 {
		// SQS answers a long poll with the first message: about one a batch
		// (the emulator's 100 ms polling merges a few more; not counted).
		return 1, 1, b.esm[esmKey{10, 0}].Sent > 0
	}
	rates := slices.Clone(esmRates)
	if rate <= rates[0] {
		// Below the slowest rate measured a second message joins a batch
		// in proportion to the rate: toward batches of one as traffic
		// stops (and the receives per event of the slowest rate).
		bl, rl, ml := point(rates[0])
		return 1 + (bl-1)*rate/rates[0], rl, ml
	}
	if rate >= rates[len(rates)-1] {
		return point(rates[len(rates)-1])
	}
	for i := 1; i < len(rates); i++ {
		lo, hi := rates[i-1], rates[i]
		if rate > hi {
			continue
		}
		bl, rl, ml := point(lo)
		bh, rh, mh := point(hi)
		f := (logf(rate) - logf(lo)) / (logf(hi) - logf(lo))
		return bl + (bh-bl)*f, rl + (rh-rl)*f, ml && mh
	}
	return point(rate)
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
