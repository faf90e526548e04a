package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/lab/latency"
	"github.com/hookledger/hookledger/webhook"
)

// The memory size (section memory): what the template's MemorySize does to
// the receiver's CPU-bound work, verifying a large body, and whether the
// largest body it accepts fits. Lambda gives a function CPU in proportion
// to its memory (bench.LambdaMBPerVCPU); this machine cannot be slowed that
// way, so the CPU time measured here on a full core is stretched by the
// share, the premise the cost model uses too.

// memoryLambdaPayload is Lambda's limit on a synchronous invocation's
// request: "6 MB" (Lambda's MB is 1,024 KB), which bounds the largest body
// the receiver ever sees, whatever HOOKLEDGER_MAX_BODY says.
const memoryLambdaPayload = 6 << 20

func (b *benchRun) memorySize(ctx context.Context) error {
	st, err := b.readStack()
	if err != nil {
		return err
	}
	env, cleanup, err := b.newEnv(ctx, "mem", "")
	if err != nil {
		return err
	}
	defer cleanup()
	bucket, dropBucket, err := b.bucket(ctx, env)
	if err != nil {
		return err
	}
	defer dropBucket()
	timed, err := b.awsConfig(ctx, latency.Published(11).APIOption)
	if err != nil {
		return err
	}
	t := &bench.MD{Title: fmt.Sprintf("Large bodies at 128 MB and at 256 MB (the template: %d MB; CPU time on a full core here, stretched to the memory's share of a vCPU: %.3f and %.3f)",
		st.MemoryMB, 128.0/bench.LambdaMBPerVCPU, 256.0/bench.LambdaMBPerVCPU),
		Header: []string{"what", "body", "ms here", "CPU ms here", "ms at 128 MB", "ms at 256 MB", "allocated MB", "peak Go memory MB"}}
	add := func(what string, body int, r memRun) {
		t.Add(what, fmt.Sprintf("%.2f MiB", float64(body)/(1<<20)), r.ms, r.cpu, bench.LambdaMS(r.ms, r.cpu, 128), bench.LambdaMS(r.ms, r.cpu, 256),
			float64(r.alloc)/(1<<20), float64(r.peak)/(1<<20))
	}

	// Verification alone: Stripe's signature and the key and type, which
	// parse the whole body.
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	for _, size := range []int{3 << 10, config.MaxBodyLimit} {
		body := testbody.JSON("evt_mem_"+cli.RandomHex(6), size)
		now := time.Now()
		h, err := v.Sign(webhook.Message{Body: body, Now: now}, benchSecret)
		if err != nil {
			return err
		}
		req := &webhook.Request{Method: "POST", URL: "https://hooks.example.com/webhooks/stripe/acme", Header: h, Body: body}
		r, err := memMeasure(7, func() error { _, err := v.Verify(req, []string{benchSecret}, now); return err })
		if err != nil {
			return err
		}
		add("verify (signature, key, type)", len(body), r)
	}

	// The receiver's whole invocation, from the payload Lambda hands over to
	// the answer, with AWS latencies: 1 MiB rides in the message; the
	// largest that fits Lambda's payload goes through the payload store.
	conf := env.conf
	conf.MaxBody = config.MaxBodyLimit
	h1, err := buildHandlers(&benchEnv{raw: env.raw, table: env.table, queueURL: env.queueURL, conf: conf}, timed)
	if err != nil {
		return err
	}
	conf.PayloadBucket, conf.PayloadPrefix, conf.MaxBody = bucket, config.DefaultPayloadPrefix, config.MaxBodyWithStore
	h6, err := buildHandlers(&benchEnv{raw: env.raw, table: env.table, queueURL: env.queueURL, conf: conf}, timed)
	if err != nil {
		return err
	}
	largest := 0
	for _, c := range []struct {
		h    *handlers
		size int
	}{{h1, config.MaxBodyLimit}, {h6, config.MaxBodyWithStore}} {
		size := c.size
		var raws [][]byte
		for range 5 {
			raw, n, err := invocationPayload(size)
			if err != nil {
				return err
			}
			size = n // the next bodies at the size that fit
			raws = append(raws, raw)
		}
		i := 0
		r, err := memMeasure(len(raws), func() error {
			var req events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(raws[i], &req); err != nil {
				return err
			}
			i++
			resp, _ := c.h.rcv.Handle(ctx, req)
			if resp.StatusCode != 200 {
				return fmt.Errorf("a %d-byte body: receiver answered %d %s", size, resp.StatusCode, resp.Body)
			}
			_, err := json.Marshal(resp)
			return err
		})
		if err != nil {
			return err
		}
		what := "receiver, whole invocation, AWS latencies"
		if c.size > config.MaxBodyLimit {
			what += ", payload store"
			largest = size
		}
		add(what, size, r)
		c.h.logs.take()
	}
	// The processor's invocation: ten 1 MiB events, gzip'd in their
	// messages, the largest batch the receiver's cap lets through whole.
	sq := sqs.NewFromConfig(env.raw)
	var batches []events.SQSEvent
	for range 4 {
		batch, err := memBatch(ctx, h1, sq, env.queueURL, 10, config.MaxBodyLimit)
		if err != nil {
			return err
		}
		batches = append(batches, batch)
	}
	payload := 0
	i := 0
	r, err := memMeasure(len(batches), func() error {
		raw, err := json.Marshal(batches[i]) // what Lambda hands over
		if err != nil {
			return err
		}
		payload = len(raw)
		i++
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return err
		}
		if resp, _ := h1.proc.Handle(ctx, ev); len(resp.BatchItemFailures) > 0 {
			return fmt.Errorf("the processor failed %d of a batch of 1 MiB events", len(resp.BatchItemFailures))
		}
		return nil
	})
	if err != nil {
		return err
	}
	add(fmt.Sprintf("processor, a batch of ten, AWS latencies (a %.1f MB invocation)", float64(payload)/1e6), 10*config.MaxBodyLimit, r)
	h1.logs.take()
	t.Notes = []string{fmt.Sprintf("Bodies: realistic JSON (internal/testbody); the largest the receiver can be handed is %.2f MiB, what fits Lambda's 6 MB invocation payload once API Gateway has put it in a JSON string (HOOKLEDGER_MAX_BODY with the payload store allows 6 MiB). ", float64(largest)/(1<<20)) +
		"ms here: median wall time (AWS latencies injected for the receiver); CPU ms: the process's CPU time for it, garbage collection included; at N MB: ms here with the CPU time stretched to N MB's share of a vCPU (\"At 1,769 MB, a function has the equivalent of one vCPU\", Lambda's configuration-memory page), taking a vCPU there for a core here. " +
		"Allocated: bytes allocated by one call. Peak Go memory: the most the Go runtime held from the operating system during a call, above what it held before (sampled every 0.5 ms, heap and stacks), in this process, whose own live heap (SDK clients, the bench) makes the collector's target higher than a receiver's: an upper bound for the function, on top of its idle resident size (the cold-start section)."}
	t.Print(b.out)
	return nil
}

// memRun is one measured piece of work: medians of wall and CPU time,
// bytes allocated by one call, and the peak Go memory above the start.
type memRun struct {
	ms, cpu     float64
	alloc, peak uint64
}

// memMeasure runs f n times (after one warm-up) and measures it.
func memMeasure(n int, f func() error) (memRun, error) {
	if err := f(); err != nil { // warm-up: connections, pools
		return memRun{}, err
	}
	var ms, cpu []float64
	var r memRun
	for range n - 1 {
		runtime.GC()
		debug.FreeOSMemory()
		base := goMemory()
		var peak atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // sample the runtime's memory while f runs
			defer close(done)
			for {
				if m := goMemory(); m > peak.Load() {
					peak.Store(m)
				}
				select {
				case <-stop:
					return
				case <-time.After(500 * time.Microsecond):
				}
			}
		}()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0, c0 := time.Now(), bench.CPUTime()
		err := f()
		cpu = append(cpu, float64((bench.CPUTime()-c0).Microseconds())/1000)
		ms = append(ms, msSince(t0))
		runtime.ReadMemStats(&after)
		close(stop)
		<-done
		if err != nil {
			return r, err
		}
		r.alloc = max(r.alloc, after.TotalAlloc-before.TotalAlloc)
		if p := peak.Load(); p > base {
			r.peak = max(r.peak, p-base)
		}
	}
	r.ms, r.cpu = bench.Median(ms), bench.Median(cpu)
	return r, nil
}

var goMemorySamples = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}

// goMemory is what the Go runtime holds from the operating system: all it
// mapped less what it returned.
func goMemory() uint64 {
	s := append([]metrics.Sample(nil), goMemorySamples...)
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// invocationPayload is the payload Lambda hands the receiver for a signed
// Stripe delivery of a JSON body of about size bytes, shrunk until it fits
// Lambda's limit; and the body's size.
func invocationPayload(size int) ([]byte, int, error) {
	for {
		body := testbody.JSON("evt_mem_"+cli.RandomHex(8), size)
		raw, err := json.Marshal(benchRequest(body))
		if err != nil {
			return nil, 0, err
		}
		if len(raw) <= memoryLambdaPayload {
			return raw, len(body), nil
		}
		size = size * 95 / 100
	}
}

// memBatch sends n events of about size bytes through h's receiver and
// takes their messages off the queue as one batch, as the event source
// hands it over.
func memBatch(ctx context.Context, h *handlers, sq *sqs.Client, queueURL string, n, size int) (events.SQSEvent, error) {
	sent := map[string]bool{}
	for range n {
		key := "evt_memb_" + cli.RandomHex(8)
		if resp, _ := h.rcv.Handle(ctx, benchRequest(testbody.JSON(key, size))); resp.StatusCode != 200 {
			return events.SQSEvent{}, fmt.Errorf("receiver answered %d %s", resp.StatusCode, resp.Body)
		}
		sent[key] = true
	}
	var batch events.SQSEvent
	for tries := 0; len(batch.Records) < n && tries < 20; tries++ {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: int32(n - len(batch.Records)), WaitTimeSeconds: 1})
		if err != nil {
			return batch, err
		}
		for _, msg := range out.Messages {
			sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: msg.ReceiptHandle})
			m, err := queue.Decode(aws.ToString(msg.Body))
			if err != nil || !sent[m.ID] {
				continue
			}
			delete(sent, m.ID)
			batch.Records = append(batch.Records, events.SQSMessage{MessageId: aws.ToString(msg.MessageId), Body: aws.ToString(msg.Body), ReceiptHandle: aws.ToString(msg.ReceiptHandle)})
		}
	}
	if len(batch.Records) < n {
		return batch, fmt.Errorf("took %d of %d messages off the queue", len(batch.Records), n)
	}
	return batch, nil
}

// checkMemory allows 0 (template.yaml's) or one of Lambda's memory sizes.
func checkMemory(fs *flag.FlagSet) error {
	if v, _ := fs.Lookup("memory").Value.(flag.Getter).Get().(int); v == 0 {
		return nil
	}
	return cli.CheckInt(fs, "memory", 128, 10240) // Lambda's memory sizes, MB
}

// memoryMB is --memory, or template.yaml's memory size.
func (b *benchRun) memoryMB() int {
	if b.memory > 0 {
		return b.memory
	}
	if st, err := b.readStack(); err == nil {
		return st.MemoryMB
	}
	return 128 // Lambda's smallest; readStack's error stops the sections that price
}

// processorMB is the processor's memory size (template.yaml's), where a
// step of the effect runs.
func (b *benchRun) processorMB() int {
	if st, err := b.readStack(); err == nil {
		return st.ProcessorMB
	}
	return b.memoryMB()
}
