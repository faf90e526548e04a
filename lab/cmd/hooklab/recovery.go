package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookledger/hookledger/internal/engine"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
)

// recoveryFlags are the recovery section's settings.
type recoveryFlags struct {
	records, accountRecords, target, consumers, tenants int
	timeout, every                                      time.Duration
}

func addRecoveryFlags(fs *flag.FlagSet) *recoveryFlags {
	r := &recoveryFlags{}
	fs.IntVar(&r.records, "recovery-records", 20000, "overdue records the recovery section creates and re-drives")
	fs.IntVar(&r.accountRecords, "recovery-account-records", 200, "overdue records of the recovery section's unit-accounting pass")
	fs.IntVar(&r.target, "recovery-target", 60000, "the backlog the recovery section extrapolates to")
	fs.DurationVar(&r.timeout, "recovery-timeout", 60*time.Second, "time budget (Lambda timeout) of one reclaimer invocation; the template's is 60s")
	fs.DurationVar(&r.every, "recovery-schedule", time.Minute, "the reclaimer's schedule; the template's is rate(1 minute)")
	fs.IntVar(&r.consumers, "recovery-consumers", 10, "concurrent processor batches taking the re-driven messages off the queue (the template's ProcessorConcurrency is 10)")
	fs.IntVar(&r.tenants, "recovery-tenants", 20, "tenants the overdue records are spread over")
	return r
}

// AWS latencies the extrapolation assumes (in-Region, p50-ish, rounded up;
// see docs/recovery.md). They are assumptions, not measurements.
var awsLatency = map[string]time.Duration{
	"DynamoDB.Query":         10 * time.Millisecond,
	"DynamoDB.BatchGetItem":  15 * time.Millisecond,
	"DynamoDB.UpdateItem":    8 * time.Millisecond,
	"SQS.SendMessageBatch":   20 * time.Millisecond,
	"SQS.GetQueueAttributes": 10 * time.Millisecond,
}

// recoveryOps are the requests a run makes, in the order they are shown.
var recoveryOps = []string{"DynamoDB.Query", "DynamoDB.BatchGetItem", "DynamoDB.UpdateItem", "SQS.SendMessageBatch", "SQS.GetQueueAttributes"}

// benchContinuer records the continuations a run asks for; the driver
// starts them, as Lambda would.
type benchContinuer struct {
	mu  sync.Mutex
	ins []reclaimer.Input
}

func (c *benchContinuer) Continue(_ context.Context, in reclaimer.Input) error {
	c.mu.Lock()
	c.ins = append(c.ins, in)
	c.mu.Unlock()
	return nil
}

// seedBacklog writes n overdue records with 1 KB payloads through the
// ledger itself (so they have exactly the shape the receiver writes), as
// if received an hour ago and never processed.
func seedBacklog(ctx context.Context, db ledger.API, table, prefix string, n, tenants int) error {
	past := time.Now().Add(-time.Hour)
	l, err := ledger.New(db, ledger.Options{Table: table, Now: func() time.Time { return past }})
	if err != nil {
		return err
	}
	var next atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				id := ledger.Key{Source: "stripe", Tenant: fmt.Sprintf("tenant-%02d", i%tenants), ID: fmt.Sprintf("%s_%06d", prefix, i)}
				if _, created, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: strings.Repeat("0", 64)}); err != nil || !created {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("create %s: created=%v %v", id, created, err))
					continue
				}
				if err := l.PutPayload(ctx, id, testbody.JSON(id.ID, testbody.Sizes[0]), strings.Repeat("0", 64)); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		return fmt.Errorf("seeding the backlog: %d writes failed, first: %v", failed.Load(), firstErr.Load())
	}
	return ctx.Err()
}

// drainConsumer is the processor's side of the drain: workers receive
// batches of 10 as the event source mapping does, hand them to the real
// processor handler (claim, no route so no effect, complete as unrouted:
// done) and delete what it did not report as failed; it counts the
// messages per key and the outcomes, and watches the queue's depth.
type drainConsumer struct {
	sq   *sqs.Client
	url  string
	proc *processor.Handler

	mu       sync.Mutex
	count    map[string]int
	last     time.Time
	maxDepth int
	failed   int
	receives int // ReceiveMessage calls that returned messages
	deletes  int // DeleteMessageBatch calls
}

func (c *drainConsumer) run(ctx context.Context, workers int) func() {
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for cctx.Err() == nil {
				out, err := c.sq.ReceiveMessage(cctx, &sqs.ReceiveMessageInput{QueueUrl: &c.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 180,
					MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
				if err != nil || len(out.Messages) == 0 {
					continue
				}
				batch := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
				for i, m := range out.Messages {
					batch.Records[i] = events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body),
						ReceiptHandle: aws.ToString(m.ReceiptHandle), Attributes: m.Attributes}
				}
				bctx, bcancel := context.WithTimeout(cctx, 30*time.Second) // the template's processor timeout
				resp, _ := c.proc.Handle(bctx, batch)
				bcancel()
				failed := map[string]bool{}
				for _, f := range resp.BatchItemFailures {
					failed[f.ItemIdentifier] = true
				}
				var del []sqstypes.DeleteMessageBatchRequestEntry
				c.mu.Lock()
				for i, m := range out.Messages {
					if msg, err := queue.Decode(aws.ToString(m.Body)); err == nil {
						c.count[msg.ID]++
					}
					if failed[aws.ToString(m.MessageId)] {
						c.failed++
						continue
					}
					del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
				}
				c.last = time.Now()
				c.receives++
				if len(del) > 0 {
					c.deletes++
				}
				c.mu.Unlock()
				if len(del) > 0 {
					c.sq.DeleteMessageBatch(cctx, &sqs.DeleteMessageBatchInput{QueueUrl: &c.url, Entries: del})
				}
			}
		})
	}
	wg.Go(func() { // the queue's depth, twice a second
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-t.C:
			}
			out, err := c.sq.GetQueueAttributes(cctx, &sqs.GetQueueAttributesInput{QueueUrl: &c.url,
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
			if err != nil {
				continue
			}
			d, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
			c.mu.Lock()
			c.maxDepth = max(c.maxDepth, d)
			c.mu.Unlock()
		}
	})
	return func() { cancel(); wg.Wait() }
}

func (c *drainConsumer) tally() (unique, dups int, last time.Time, maxDepth int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.count {
		unique++
		if n > 1 {
			dups += n - 1
		}
	}
	return unique, dups, c.last, c.maxDepth
}

// recoveryInvocation is one reclaimer invocation of the drain.
type recoveryInvocation struct {
	at, took time.Duration
	rep      reclaimer.Report
}

func (b *benchRun) recovery(ctx context.Context) error {
	o := b.rec
	units, err := b.recoveryUnits(ctx, o.accountRecords)
	if err != nil {
		return fmt.Errorf("unit accounting: %w", err)
	}
	env, cleanup, err := b.newEnv(ctx, "recov", "")
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Fprintf(b.log, "bench: recovery: seeding %d overdue records…\n", o.records)
	seedStart := time.Now()
	if err := seedBacklog(ctx, dynamodb.NewFromConfig(env.raw), env.table, "evt_backlog", o.records, o.tenants); err != nil {
		return err
	}
	seedDur := time.Since(seedStart)

	m := awstest.NewMeter()
	cfg, err := b.awsConfig(ctx, m.APIOption)
	if err != nil {
		return err
	}
	conf := env.conf
	conf.FunctionName = "" // the bench drives the continuations itself
	h, err := reclaimer.FromConfig(conf, cfg, slog.New(slog.NewJSONHandler(b.log, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	cont := &benchContinuer{}
	h.Continue = cont
	proc, err := processor.FromConfig(env.conf, env.raw, engine.MustRoutes(hookledger.NewRouter()), slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	cons := &drainConsumer{sq: sqs.NewFromConfig(env.raw), url: env.queueURL, proc: proc, count: map[string]int{}}
	stopConsumer := cons.run(ctx, o.consumers)
	defer stopConsumer()

	fmt.Fprintf(b.log, "bench: recovery: draining (reclaimer invocations of %v, schedule every %v)…\n", o.timeout, o.every)
	m.Reset()
	start := time.Now()
	var invs []recoveryInvocation
	redriven, scheduled := 0, 1
	in := reclaimer.Input{}
	var redrivenAt time.Duration
	for redriven < o.records && ctx.Err() == nil && len(invs) < 200 {
		ictx, cancel := context.WithTimeout(ctx, o.timeout)
		t0 := time.Now()
		rep, err := h.Handle(ictx, in)
		cancel()
		if err != nil {
			return fmt.Errorf("invocation %d: %w", len(invs)+1, err)
		}
		invs = append(invs, recoveryInvocation{at: t0.Sub(start), took: time.Since(t0), rep: rep})
		redriven += rep.Redriven()
		if rep.Redriven() > 0 {
			redrivenAt = time.Since(start)
		}
		if rep.Continued {
			cont.mu.Lock()
			in = cont.ins[len(cont.ins)-1]
			cont.mu.Unlock()
			continue
		}
		if redriven >= o.records {
			break
		}
		// No continuation: the next schedule tick starts the next run.
		in = reclaimer.Input{}
		next := start.Add(time.Duration(math.Ceil(float64(time.Since(start))/float64(o.every))) * o.every)
		scheduled++
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
	// Let the consumer take the last messages.
	deadline := time.Now().Add(2 * time.Minute)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if u, _, _, _ := cons.tally(); u >= o.records {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopConsumer()
	unique, dups, last, maxDepth := cons.tally()
	cons.mu.Lock()
	procFailed, receives, deletes := cons.failed, cons.receives, cons.deletes
	cons.mu.Unlock()
	processedAt := last.Sub(start)
	calls := m.Snapshot()
	l, err := ledger.New(dynamodb.NewFromConfig(env.raw), ledger.Options{Table: env.table})
	if err != nil {
		return err
	}
	counts, err := l.Counts(ctx)
	if err != nil {
		return err
	}

	var tot reclaimer.Report
	for _, iv := range invs {
		r := iv.rep
		tot.Pages += r.Pages
		tot.Requeued += r.Requeued
		tot.Reset += r.Reset
		tot.Conflicts += r.Conflicts
		tot.Unsent += r.Unsent
		tot.Errors += r.Errors
		tot.PacedMS += r.PacedMS
	}
	perMin := float64(redriven) / redrivenAt.Minutes()
	per := func(n int) string { return fmt.Sprintf("%.3f", float64(n)/float64(max(redriven, 1))) }

	t := &bench.MD{Title: fmt.Sprintf("Recovery: %d overdue records re-driven with default settings (in-process against the emulator: the reclaimer in %v invocations, the processor in %d concurrent batches of 10)",
		o.records, o.timeout, o.consumers),
		Header: []string{"what", "value"}}
	t.Add("overdue records (1 KB payloads, 16 due shards, "+strconv.Itoa(o.tenants)+" tenants)", o.records)
	t.Add("seeding them through the ledger (Create + PutPayload)", fmt.Sprintf("%.1f s", seedDur.Seconds()))
	t.Add("invocations (scheduled + continuations)", fmt.Sprintf("%d (%d + %d)", len(invs), scheduled, len(invs)-scheduled))
	t.Add("re-driven", fmt.Sprintf("%d (requeued %d, reset %d)", redriven, tot.Requeued, tot.Reset))
	t.Add("drain time (first invocation → last record re-driven)", fmt.Sprintf("%.1f s", redrivenAt.Seconds()))
	t.Add("**records re-driven per minute**", fmt.Sprintf("**%.0f**", perMin))
	t.Add("last message processed", fmt.Sprintf("%.1f s", processedAt.Seconds()))
	t.Add("records done afterwards / still received", fmt.Sprintf("%d / %d", counts[ledger.Done], counts[ledger.Received]))
	t.Add("messages: keys / more than one per key / processor failures", fmt.Sprintf("%d / %d / %d", unique, dups, procFailed))
	t.Add("deepest queue seen (cap HOOKLEDGER_RECLAIM_MAX_QUEUE)", fmt.Sprintf("%d (%d)", maxDepth, cmp.Or(conf.ReclaimMaxQueue, reclaimer.DefaultMaxQueue)))
	t.Add("time reclaimer workers waited for room on the queue (summed)", fmt.Sprintf("%.1f s", float64(tot.PacedMS)/1000))
	t.Add("pages / conflicts / unsent / errors", fmt.Sprintf("%d / %d / %d / %d", tot.Pages, tot.Conflicts, tot.Unsent, tot.Errors))
	for _, op := range recoveryOps {
		t.Add(op+" requests (per re-driven record)", fmt.Sprintf("%d (%s)", calls[op], per(calls[op])))
	}
	t.Add("reclaimer's DynamoDB requests per re-driven record", per(calls["DynamoDB.Query"]+calls["DynamoDB.BatchGetItem"]+calls["DynamoDB.UpdateItem"]))
	t.Add("reclaimer's SQS requests per re-driven record", per(calls["SQS.SendMessageBatch"]+calls["SQS.GetQueueAttributes"]))
	t.Add("write units per re-driven record (table + due index)", fmt.Sprintf("%s + %s", bench.Num(units.WCU), bench.Num(units.IndexWCU)))
	t.Add("read units per re-driven record", bench.Num(units.RCU))
	t.Add("SQS billed requests per re-driven record (64 KB chunks)", bench.Num(units.SQS))
	var runs []string
	for i, iv := range invs {
		if i >= 12 {
			runs = append(runs, "…")
			break
		}
		runs = append(runs, fmt.Sprintf("#%d at %.0f s: %.1f s, %d re-driven, %s", i+1, iv.at.Seconds(), iv.took.Seconds(), iv.rep.Redriven(), iv.rep.Stopped))
	}
	t.Notes = []string{
		"Invocations: " + strings.Join(runs, "; ") + ".",
		fmt.Sprintf("Every invocation gets a context deadline of %v, as Lambda gives the function; a run stops starting pages 5 s before it. "+
			"A run that ends with due records left and something re-driven asks for a continuation (the function invoking itself), which the bench starts at once; "+
			"otherwise the next run waits for the next tick of a %v schedule. Ticks that fall inside a run would find the run lock held and end at once. "+
			"The processor side is the real processor handler (claim, no route, complete: done) fed as the event source mapping feeds it; "+
			"it shares the emulator with the reclaimer. More than one message per key means a record was re-driven again before it was processed.", o.timeout, o.every),
		fmt.Sprintf("Units come from a separate pass over %d records with the unit accountant (each write's item read before and after; the run lock's two writes are included); the drain itself runs with only the request meter.", o.accountRecords),
	}
	t.Print(b.out)
	mix := map[string]float64{}
	for _, op := range recoveryOps {
		mix[op] = float64(calls[op]) / float64(max(redriven, 1))
	}
	mix["processor: DynamoDB.UpdateItem"] = 2 * float64(unique+dups) / float64(max(redriven, 1)) // claim + complete per message
	mix["processor: SQS.ReceiveMessage"] = float64(receives) / float64(max(redriven, 1))
	mix["processor: SQS.DeleteMessageBatch"] = float64(deletes) / float64(max(redriven, 1))
	return b.recoveryCeiling(ctx, env, perMin, mix, units)
}

// recoveryUnits re-drives a small backlog with the unit accountant on and
// returns the units per re-driven record.
func (b *benchRun) recoveryUnits(ctx context.Context, n int) (units.Usage, error) {
	env, cleanup, err := b.newEnv(ctx, "recunits", "")
	if err != nil {
		return units.Usage{}, err
	}
	defer cleanup()
	if err := seedBacklog(ctx, dynamodb.NewFromConfig(env.raw), env.table, "evt_units", n, 4); err != nil {
		return units.Usage{}, err
	}
	acc := &units.Accountant{Raw: dynamodb.NewFromConfig(env.raw), Tables: map[string]units.TableSpec{env.table: ledgerTable}}
	cfg, err := b.awsConfig(ctx, acc.APIOption)
	if err != nil {
		return units.Usage{}, err
	}
	h, err := reclaimer.FromConfig(env.conf, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		return units.Usage{}, err
	}
	acc.Take()
	rep, err := h.Handle(ctx, nil)
	if err != nil {
		return units.Usage{}, err
	}
	if rep.Redriven() != n {
		return units.Usage{}, fmt.Errorf("re-drove %d of %d (%+v)", rep.Redriven(), n, rep)
	}
	u := acc.Take()
	f := float64(n)
	return units.Usage{WCU: u.WCU / f, IndexWCU: u.IndexWCU / f, RCU: u.RCU / f, SQS: u.SQS / f}, nil
}

// recoveryCeiling measures what the emulator itself sustains for each
// request of the drain, at the reclaimer's concurrency, and sets the
// measured rate against it and against AWS.
func (b *benchRun) recoveryCeiling(ctx context.Context, env *benchEnv, measured float64, mix map[string]float64, units units.Usage) error {
	fmt.Fprintln(b.log, "bench: recovery: the emulator's own rates…")
	db, sq := dynamodb.NewFromConfig(env.raw), sqs.NewFromConfig(env.raw)
	const n = 600 // a fresh set of records to read and write, in the drained table
	if err := seedBacklog(ctx, db, env.table, "evt_ceiling", n, 4); err != nil {
		return err
	}
	keys := make([]map[string]types.AttributeValue, n)
	for i := range keys {
		id := ledger.Key{Source: "stripe", Tenant: fmt.Sprintf("tenant-%02d", i%4), ID: fmt.Sprintf("evt_ceiling_%06d", i)}
		keys[i] = map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: id.PK()}, "sk": &types.AttributeValueMemberS{Value: "r"}}
	}
	const conc = reclaimer.DefaultWorkers
	measure := func(ops int, op func(i int) error) (float64, error) {
		var next atomic.Int64
		var firstErr atomic.Value
		var wg sync.WaitGroup
		start := time.Now()
		for range conc {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= ops || ctx.Err() != nil {
						return
					}
					if err := op(i); err != nil {
						firstErr.CompareAndSwap(nil, err)
					}
				}
			})
		}
		wg.Wait()
		if e, ok := firstErr.Load().(error); ok {
			return 0, e
		}
		return float64(ops) / time.Since(start).Seconds(), nil
	}
	update := func(i int) error {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &env.table, Key: keys[i%n],
			UpdateExpression: aws.String("SET ver = ver + :one, written_by = :by"), ConditionExpression: aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":by": &types.AttributeValueMemberS{Value: "bench"}},
			ReturnValues:              types.ReturnValueAllNew})
		return err
	}
	scratch, _, err := queue.CreateQueues(ctx, sq, queue.QueueSpec{Name: env.table + "-ceiling"})
	if err != nil {
		return err
	}
	defer sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &scratch})
	defer sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(scratch + "-dlq")})
	body, _ := queue.Encode(queue.Message{Source: "stripe", Tenant: "tenant-00", ID: "evt_ceiling", Body: testbody.JSON("evt_ceiling", testbody.Sizes[0])})
	entries := make([]sqstypes.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body), MessageGroupId: aws.String("tenant-00")}
	}
	var handles sync.Map // receipt handles of the received batches, by index
	ops := []struct {
		name string
		n    int
		op   func(i int) error
	}{
		{"DynamoDB.UpdateItem", n, update},
		{"DynamoDB.BatchGetItem", 200, func(i int) error {
			from := (i * 25) % (n - 25)
			_, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				env.table: {Keys: keys[from : from+25], ConsistentRead: aws.Bool(true)}}})
			return err
		}},
		{"DynamoDB.Query", 200, func(i int) error {
			_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: &env.table, IndexName: aws.String(ledger.DueIndex),
				KeyConditionExpression:    aws.String("due_shard = :s AND due_at <= :now"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberN{Value: strconv.Itoa(i % 16)}, ":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)}},
				Limit:                     aws.Int32(25)})
			return err
		}},
		{"SQS.SendMessageBatch", 300, func(int) error {
			_, err := sq.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &scratch, Entries: entries})
			return err
		}},
		{"SQS.GetQueueAttributes", 300, func(int) error {
			_, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &scratch,
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
			return err
		}},
		{"processor: SQS.ReceiveMessage", 200, func(i int) error {
			out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &scratch, MaxNumberOfMessages: 10, VisibilityTimeout: 300})
			if err == nil {
				handles.Store(i, out.Messages)
			}
			return err
		}},
		{"processor: SQS.DeleteMessageBatch", 200, func(i int) error {
			v, _ := handles.Load(i)
			msgs, _ := v.([]sqstypes.Message)
			if len(msgs) == 0 {
				return nil
			}
			del := make([]sqstypes.DeleteMessageBatchRequestEntry, len(msgs))
			for j, m := range msgs {
				del[j] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: m.ReceiptHandle}
			}
			_, err := sq.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &scratch, Entries: del})
			return err
		}},
	}
	rates := map[string]float64{}
	for _, o := range ops {
		r, err := measure(o.n, o.op)
		if err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
		rates[o.name] = r
	}
	rates["processor: DynamoDB.UpdateItem"] = rates["DynamoDB.UpdateItem"]

	// Seconds of emulator capacity per re-driven record, from the drain's
	// own request mix.
	perRecord := 0.0
	t := &bench.MD{Title: fmt.Sprintf("Recovery: the emulator's ceiling (each request alone, %d concurrent) and the extrapolation to AWS", conc),
		Header: []string{"request", "per re-driven record (drain)", "emulator requests/s", "emulator ms per record", "assumed AWS latency ms"}}
	names := append(append([]string{}, recoveryOps...), "processor: DynamoDB.UpdateItem", "processor: SQS.ReceiveMessage", "processor: SQS.DeleteMessageBatch")
	for _, op := range names {
		ms := 0.0
		if rates[op] > 0 {
			ms = 1000 * mix[op] / rates[op]
		}
		perRecord += ms / 1000
		lat := "–"
		if d, ok := awsLatency[op]; ok {
			lat = strconv.FormatInt(d.Milliseconds(), 10)
		}
		t.Add(op, fmt.Sprintf("%.3f", mix[op]), rates[op], fmt.Sprintf("%.2f", ms), lat)
	}
	ceiling := 60 / perRecord
	// On AWS each worker waits for its requests in turn: one page of
	// PerShard records costs a query, two batch reads, a write per record
	// and ceil(PerShard/10) sends; workers run side by side.
	page := reclaimer.DefaultPerShard
	pageTime := awsLatency["DynamoDB.Query"] + 2*awsLatency["DynamoDB.BatchGetItem"] + time.Duration(page)*awsLatency["DynamoDB.UpdateItem"] +
		time.Duration((page+9)/10)*awsLatency["SQS.SendMessageBatch"]
	workers := min(reclaimer.DefaultWorkers, ledger.DefaultShards)
	awsPerMin := float64(workers*page) / pageTime.Seconds() * 60
	busy := 55.0 / 60 // of every minute a run works (5 s margin of a 60 s timeout), if no continuation closes the gap
	target := float64(b.rec.target)
	t.Notes = []string{
		fmt.Sprintf("Emulator ceiling: the drain's request mix, reclaimer and processor together, costs %.2f ms of emulator time per re-driven record, so the emulator sustains at most ~%.0f re-driven and processed records per minute; the drain measured %.0f (%.0f%% of it): on this machine the emulator, not the reclaimer, sets the pace.",
			perRecord*1000, ceiling, measured, 100*measured/ceiling),
		fmt.Sprintf("AWS, reclaimer alone: %d workers × %d records per page / %.0f ms per page (the assumed latencies above, each request awaited in turn) ≈ %.0f records per minute; "+
			"%.0f overdue records ≈ %.1f min of reclaimer time, %.1f min counting only 55 s of every minute (no continuations), plus up to 1 min for the first schedule tick.",
			workers, page, float64(pageTime.Milliseconds()), awsPerMin, target, target/awsPerMin, target/(awsPerMin*busy)),
		"AWS, with the processor: pacing holds the queue at HOOKLEDGER_RECLAIM_MAX_QUEUE (1,000), so the drain runs at the processor's pace when that is slower: " +
			"the template's MaximumConcurrency 10 × BatchSize 10 with a 200 ms effect takes ~450 events/s (docs/performance.md, scale table), 60,000 in ~2.2 min; with 1 s effects ~100/s, 10 min — raise ProcessorConcurrency. " +
			"New events wait behind at most 1,000 re-driven messages: ~2 s at 450/s.",
		fmt.Sprintf("Units per re-driven record (1 KB): %s table WCU (the conditional write) + %s due-index WCU (due_at moves: delete + put) + %s RCU (record and payload, consistent) + %s SQS billed requests; at list prices ≈ $%.2f per million re-driven records (the processor's own costs come on top, as for any event).",
			bench.Num(units.WCU), bench.Num(units.IndexWCU), bench.Num(units.RCU), bench.Num(units.SQS),
			(units.WCU+units.IndexWCU)*0.625+units.RCU*0.125+units.SQS*0.40),
	}
	t.Print(b.out)
	return nil
}
