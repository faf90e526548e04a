package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// How the Lambda event source for SQS batches messages, as AWS documents it
// (these are the premises of ESM; MiniStack's own event source ignores the
// batching window, so the bench plays the pollers itself against the
// emulator's queue, whose receives behave like SQS's: a long poll returns as
// soon as a message is there, with what is there, up to ten):
//
//   - "Lambda starts processing five batches at a time with five concurrent
//     invocations of your function", scales up while messages remain, and at
//     low traffic scales back to five; the optimisation to as few as two "is
//     not available when you enable the maximum concurrency setting", which
//     the template sets (ProcessorConcurrency). So five pollers.
//   - Each poller long-polls (WaitTimeSeconds 20) and, with a batching window,
//     "continues to poll messages ... until the batch window expires, the
//     invocation payload size quota is reached, or the configured maximum
//     batch size is reached"; "if your SQS queue contains very low traffic,
//     Lambda might wait for up to 20 seconds before invoking your function.
//     This is true even if you set a batch window lower than 20 seconds": the
//     poll under way when the window ends is a 20-second long poll, and the
//     batch waits for it.
//   - An invocation holds its poller for the function's time; then the batch
//     is deleted (one DeleteMessageBatch).
//
// Sources: docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html,
// docs.aws.amazon.com/lambda/latest/dg/with-sqs.html (batching window),
// read 2026-12-01.

// ESMPollers is how many pollers the event source keeps with a maximum
// concurrency set (above).
const ESMPollers = 5

// ESMLongPoll is the event source's long-poll wait.
const ESMLongPoll = 20 * time.Second

// SQSAPI is the slice of the SQS client the event source mimic calls.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// ESMConfig is one run of the mimic.
type ESMConfig struct {
	Rate      float64       // messages per second arriving on the queue (Poisson)
	For       time.Duration // how long messages arrive
	Window    time.Duration // the batching window (0: invoke on the first receive)
	BatchSize int           // the event source's BatchSize
	Pollers   int           // default ESMPollers
	Hold      time.Duration // how long an invocation holds its poller
	Seed      uint64
}

// ESMResult is what a run measured, in steady state: messages keep
// arriving, at the same rate, until the last measured one reached an
// invocation, and the counts stop there (a run that simply stopped sending
// would leave its last batches waiting out a long poll, which no steady
// stream does).
type ESMResult struct {
	Config ESMConfig
	Sent   int   // measured messages
	Sizes  []int // sizes of the batches that held a measured message
	// Delays are ms from each measured message's send being answered (the
	// moment the receiver can answer 2xx) to its batch's invocation (the
	// handler's start, less Lambda's own invoke overhead).
	Delays   []float64
	Receives int // ReceiveMessage requests, empty ones included
	Empty    int // of which returned nothing
	Deletes  int // DeleteMessageBatch requests
	Invoked  int // messages (measured or not) in the batches invoked, as the counts
	// Lost are measured messages that never reached an invocation: the
	// emulator now and then cuts a receive's answer short (a checksum
	// error), and what it handed out stays invisible for the visibility
	// timeout.
	Lost int
	// Elapsed is how long the counts ran, summed over the streams merged
	// (MergeESM): stream-seconds.
	Elapsed time.Duration
}

// EmptyPerSecond is the empty receives a second of one queue's pollers.
func (r ESMResult) EmptyPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Empty) / r.Elapsed.Seconds()
}

// MergeESM adds up runs of one configuration on separate queues (streams
// run side by side, each at the configured rate).
func MergeESM(rs []ESMResult) ESMResult {
	var m ESMResult
	for i, r := range rs {
		if i == 0 {
			m.Config = r.Config
		}
		m.Sent += r.Sent
		m.Sizes = append(m.Sizes, r.Sizes...)
		m.Delays = append(m.Delays, r.Delays...)
		m.Receives += r.Receives
		m.Empty += r.Empty
		m.Deletes += r.Deletes
		m.Invoked += r.Invoked
		m.Lost += r.Lost
		m.Elapsed += r.Elapsed
	}
	return m
}

// MeanBatch is the mean messages per invocation.
func (r ESMResult) MeanBatch() float64 {
	if len(r.Sizes) == 0 {
		return 0
	}
	n := 0
	for _, s := range r.Sizes {
		n += s
	}
	return float64(n) / float64(len(r.Sizes))
}

// ReceivesPerEvent is the receives that carried messages, per message
// invoked (the empty ones are EmptyPerSecond's).
func (r ESMResult) ReceivesPerEvent() float64 {
	if r.Invoked == 0 {
		return 0
	}
	return float64(r.Receives-r.Empty) / float64(r.Invoked)
}

// RunESM sends messages to queueURL at cfg.Rate for cfg.For while cfg.Pollers
// pollers batch them as the event source does, then keeps the stream going
// (unmeasured) until the last measured message reached an invocation, and
// reports.
func RunESM(ctx context.Context, api SQSAPI, queueURL string, cfg ESMConfig) (ESMResult, error) {
	if cfg.Pollers <= 0 {
		cfg.Pollers = ESMPollers
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > 10 {
		return ESMResult{}, fmt.Errorf("batch size %d: the mimic receives at most 10 per request", cfg.BatchSize)
	}
	if cfg.Rate <= 0 || cfg.For <= 0 {
		return ESMResult{}, errors.New("the mimic needs a positive rate and duration")
	}
	res := ESMResult{Config: cfg}
	var mu sync.Mutex
	measuredDone := 0 // measured messages invoked
	sending := true   // measured messages still being sent
	settled := func() bool { return !sending && measuredDone >= res.Sent }
	answered := map[string]time.Time{} // measured message → its send answered
	invokedAt := map[string]time.Time{}
	pctx, stopPollers := context.WithCancel(ctx)
	defer stopPollers()
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Pollers {
		wg.Go(func() {
			var batch []types.Message
			var first time.Time
			for pctx.Err() == nil {
				out, err := api.ReceiveMessage(pctx, &sqs.ReceiveMessageInput{
					QueueUrl: &queueURL, MaxNumberOfMessages: int32(cfg.BatchSize - len(batch)),
					WaitTimeSeconds: int32(ESMLongPoll / time.Second),
				})
				if pctx.Err() != nil {
					return
				}
				mu.Lock()
				if !settled() {
					res.Receives++
					if err == nil && len(out.Messages) == 0 {
						res.Empty++
					}
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if len(batch) == 0 && len(out.Messages) > 0 {
					first = time.Now()
				}
				batch = append(batch, out.Messages...)
				if len(batch) == 0 || len(batch) < cfg.BatchSize && cfg.Window > 0 && time.Since(first) < cfg.Window {
					continue // gather on: the window is open
				}
				invoked := time.Now()
				mu.Lock()
				if !settled() {
					res.Invoked += len(batch)
					res.Deletes++
					measured := 0
					for _, m := range batch {
						body := aws.ToString(m.Body)
						if len(body) < 2 || body[0] != 'm' {
							continue // the stream kept going for the last measured batch
						}
						if _, dup := invokedAt[body]; !dup {
							invokedAt[body] = invoked
							measured++
						}
					}
					if measured > 0 {
						res.Sizes = append(res.Sizes, len(batch))
						measuredDone += measured
					}
				}
				mu.Unlock()
				time.Sleep(cfg.Hold) // the invocation
				entries := make([]types.DeleteMessageBatchRequestEntry, len(batch))
				for i, m := range batch {
					entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
				}
				api.DeleteMessageBatch(context.WithoutCancel(pctx), &sqs.DeleteMessageBatchInput{QueueUrl: &queueURL, Entries: entries})
				batch = nil
			}
		})
	}
	// Poisson arrivals at cfg.Rate, from a fixed seed: the same run every
	// time. Measured messages for cfg.For, then unmeasured ones until the
	// last measured one reached an invocation (at most a long poll and the
	// window after the last was sent, plus a margin).
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6e73))
	next := start
	end := start.Add(cfg.For)
	giveUp := end.Add(ESMLongPoll + cfg.Window + 10*time.Second)
	seq := 0
stream:
	for {
		next = next.Add(time.Duration(rng.ExpFloat64() / cfg.Rate * float64(time.Second)))
		measured := !next.After(end)
		mu.Lock()
		if !measured {
			sending = false
		}
		mu.Unlock()
		// Wait for the arrival, watching for the last measured message to
		// reach an invocation (at a quiet rate the next arrival may be
		// long after it, or after the give-up time).
		for {
			mu.Lock()
			done := settled()
			mu.Unlock()
			now := time.Now()
			if done || now.After(giveUp) {
				break stream
			}
			if !now.Before(next) {
				break
			}
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(min(50*time.Millisecond, next.Sub(now))):
			}
		}
		seq++
		body := "f" + strconv.Itoa(seq)
		if measured {
			body = "m" + body[1:]
			mu.Lock()
			res.Sent++ // before the send: a poller may take it before the send is answered
			mu.Unlock()
		}
		if _, err := api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &queueURL, MessageBody: &body}); err != nil {
			return res, fmt.Errorf("send: %w", err)
		}
		if measured {
			mu.Lock()
			answered[body] = time.Now()
			mu.Unlock()
		}
	}
	res.Elapsed = time.Since(start)
	stopPollers()
	wg.Wait()
	for body, at := range answered {
		if inv, ok := invokedAt[body]; ok {
			// A poller can take a message before its send is answered:
			// the handler then starts before the 2xx, no delay.
			res.Delays = append(res.Delays, max(0, float64(inv.Sub(at).Microseconds())/1000))
		}
	}
	res.Lost = res.Sent - len(res.Delays)
	if res.Lost > max(1, res.Sent/20) {
		return res, fmt.Errorf("%d of %d messages never reached an invocation", res.Lost, res.Sent)
	}
	return res, nil
}
