package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/testbody"
	"github.com/hookledger/hookledger/lab/bench"
	"github.com/hookledger/hookledger/lab/latency"
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
)

// policies are the payload policies the bench compares.
var policies = []string{config.PayloadAlways, config.PayloadOnTrouble}

// withConf is env with another configuration.
func (env *benchEnv) withConf(c config.Config) *benchEnv {
	e := *env
	e.conf = c
	return &e
}

// bucket creates an S3 bucket for the payload store (unmetered) and
// returns its name and a cleanup.
func (b *benchRun) bucket(ctx context.Context, env *benchEnv) (string, func(), error) {
	name := "bench-" + cli.RandomHex(8)
	c := blob.NewClient(env.raw)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		return "", nil, fmt.Errorf("create the payload store's bucket: %w", err)
	}
	return name, func() {
		bg := context.Background()
		if out, err := c.ListObjectsV2(bg, &s3.ListObjectsV2Input{Bucket: &name}); err == nil {
			for _, o := range out.Contents {
				c.DeleteObject(bg, &s3.DeleteObjectInput{Bucket: &name, Key: o.Key})
			}
		}
		c.DeleteBucket(bg, &s3.DeleteBucketInput{Bucket: &name})
	}, nil
}

// largeBody is a Stripe-style invoice of about n bytes whose bulk is an
// attachment of random bytes: gzip cannot bring it under SQS's 1 MiB, so
// it travels by reference.
func largeBody(id string, n int) []byte {
	noise := make([]byte, n*3/4)
	rand.Read(noise)
	head := testbody.JSON(id, 1024) // ends with the top-level object's "}"
	return fmt.Appendf(head[:len(head)-1:len(head)-1], `,"attachment":%q}`, base64.StdEncoding.EncodeToString(noise))
}

// policyAccounting measures a new event's calls and units through the
// receiver and the processor under each payload policy, and a 2 MB body
// through the S3 payload store.
func (b *benchRun) policyAccounting(ctx context.Context) error {
	env, cleanup, err := b.newEnv(ctx, "policy", "")
	if err != nil {
		return err
	}
	defer cleanup()
	bucket, dropBucket, err := b.bucket(ctx, env)
	if err != nil {
		return err
	}
	defer dropBucket()
	m, acc, cfg, err := b.metered(ctx, env)
	if err != nil {
		return err
	}
	sq := sqs.NewFromConfig(env.raw)
	t := &bench.MD{Title: "Payload policies: a new event through the receiver and the processor (measured against the emulator)",
		Header: []string{"policy", "payload", "receiver AWS calls", "sequential round trips", "processor AWS calls", "WCU table", "WCU index", "WCU per new event", "SQS billed", "S3 requests"}}
	step := func(h *handlers, body []byte) (benchStep, benchStep, error) {
		m.Reset()
		acc.Take()
		h.logs.take()
		resp, _ := h.rcv.Handle(ctx, benchRequest(body))
		if got := resp.Headers["X-Hookledger-Result"]; got != string(receiver.Accepted) {
			return benchStep{}, benchStep{}, fmt.Errorf("receiver answered %d %s, want accepted", resp.StatusCode, got)
		}
		sNew := benchStep{calls: m.Snapshot(), u: acc.Take(), logs: h.logs.take()}
		batch, err := receiveOne(ctx, sq, env.queueURL)
		if err != nil {
			return benchStep{}, benchStep{}, err
		}
		m.Reset()
		if resp, _ := h.proc.Handle(ctx, batch); len(resp.BatchItemFailures) > 0 {
			return benchStep{}, benchStep{}, errors.New("processor reported a failure")
		}
		return sNew, benchStep{calls: m.Snapshot(), u: acc.Take(), logs: h.logs.take()}, nil
	}
	s3Calls := func(s benchStep) int { return s.calls["S3.PutObject"] + s.calls["S3.GetObject"] }
	for _, policy := range policies {
		c := env.conf
		c.Payload = policy
		h, err := buildHandlers(env.withConf(c), cfg)
		if err != nil {
			return err
		}
		for _, size := range testbody.Sizes {
			body := testbody.JSON("evt_policy_"+cli.RandomHex(8), size)
			sNew, sProc, err := step(h, body)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", policy, testbody.Label(size), err)
			}
			wcu := sNew.u.WCU + sNew.u.IndexWCU + sProc.u.WCU + sProc.u.IndexWCU
			sqsBilled := sNew.u.SQS + units.SQSRequests(len(msgBody(body))) + 1
			rts := 2
			t.Add(policy, testbody.Label(size), sNew.callList(), rts, sProc.callList(), sNew.u.WCU+sProc.u.WCU, sNew.u.IndexWCU+sProc.u.IndexWCU, wcu, sqsBilled, s3Calls(sNew)+s3Calls(sProc))
		}
	}
	// A 2 MB body through the payload store (the receiver writes the
	// object while it enqueues; the processor reads it back).
	c := env.conf
	c.PayloadBucket, c.PayloadPrefix, c.MaxBody = bucket, config.DefaultPayloadPrefix, config.MaxBodyWithStore
	h, err := buildHandlers(env.withConf(c), cfg)
	if err != nil {
		return err
	}
	body := largeBody("evt_policy_large_"+cli.RandomHex(8), 2<<20)
	sNew, sProc, err := step(h, body)
	if err != nil {
		return fmt.Errorf("2 MB body: %w", err)
	}
	wcu := sNew.u.WCU + sNew.u.IndexWCU + sProc.u.WCU + sProc.u.IndexWCU
	sqsBilled := sNew.u.SQS + units.SQSRequests(len(msgBody([]byte(`{}`)))) + 1
	t.Add("always + S3 store", fmt.Sprintf("%.1f MB", float64(len(body))/1e6), sNew.callList(), 2, sProc.callList(), sNew.u.WCU+sProc.u.WCU, sNew.u.IndexWCU+sProc.u.IndexWCU, wcu, sqsBilled, s3Calls(sNew)+s3Calls(sProc))
	t.Notes = []string{
		"Sequential round trips: what the sender waits for on the new-event path: the record, then (always) the payload write and the enqueue at once, " +
			"(on-trouble) the enqueue alone, (S3 store) the object write and the enqueue at once. WCU per new event: receiver and processor, table and due index. " +
			"on-trouble stores the payload only when the event runs into trouble (failed enqueue, redelivery, failure, burial), so a new event that completes on its first delivery writes none. " +
			"SQS billed: send + the event source's receive (same chunks) + delete, batches of one. The 2 MB body rides in the message by reference: one chunk each way.",
	}
	t.Print(b.out)
	return nil
}

// latency times the receiver with per-request AWS latency injected
// (lab/latency: published figures), to count the round trips a sender
// waits for.
func (b *benchRun) latency(ctx context.Context) error {
	env, cleanup, err := b.newEnv(ctx, "latency", "")
	if err != nil {
		return err
	}
	defer cleanup()
	bucket, dropBucket, err := b.bucket(ctx, env)
	if err != nil {
		return err
	}
	defer dropBucket()
	inj := latency.Published(42)
	cfg, err := b.awsConfig(ctx, inj.APIOption)
	if err != nil {
		return err
	}
	sq := sqs.NewFromConfig(env.raw)
	n := b.latencyN
	type series struct {
		name, rts string
		ms        []float64
	}
	var rows []*series
	add := func(name, rts string) *series {
		s := &series{name: name, rts: rts}
		rows = append(rows, s)
		return s
	}
	timed := func(s *series, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		s.ms = append(s.ms, float64(time.Since(t0).Microseconds())/1000)
		return nil
	}
	handle := func(h *handlers, req events.APIGatewayV2HTTPRequest, want ...receiver.Result) error {
		resp, _ := h.rcv.Handle(ctx, req)
		got := resp.Headers["X-Hookledger-Result"]
		for _, w := range want {
			if got == string(w) {
				return nil
			}
		}
		return fmt.Errorf("receiver answered %d %s, want %v", resp.StatusCode, got, want)
	}
	const size = 3 << 10
	proc := add("processor: claim, no-op effect, complete", "2 (DynamoDB, DynamoDB)")
	dup := add("receiver: duplicate of a done event", "1 (DynamoDB)")
	for _, policy := range policies {
		c := env.conf
		c.Payload = policy
		h, err := buildHandlers(env.withConf(c), cfg)
		if err != nil {
			return err
		}
		rts := "2 (DynamoDB; then payload ∥ SQS)"
		if policy == config.PayloadOnTrouble {
			rts = "2 (DynamoDB; then SQS)"
		}
		nw := add("receiver: new event, payload "+policy, rts)
		for range n {
			req := benchRequest(testbody.JSON("evt_lat_"+cli.RandomHex(10), size))
			if err := timed(nw, func() error { return handle(h, req, receiver.Accepted) }); err != nil {
				return err
			}
			batch, err := receiveOne(ctx, sq, env.queueURL)
			if err != nil {
				return err
			}
			if err := timed(proc, func() error {
				if resp, _ := h.proc.Handle(ctx, batch); len(resp.BatchItemFailures) > 0 {
					return errors.New("processor reported a failure")
				}
				return nil
			}); err != nil {
				return err
			}
			if err := timed(dup, func() error { return handle(h, req, receiver.Duplicate) }); err != nil {
				return err
			}
		}
	}
	// Three sequential round trips: the replay guard (a source's opt-in
	// "replay_guard" claims the body digest first), and the receiver as it
	// was before this change (record, payload, enqueue one after another),
	// rebuilt here from the same ledger and queue calls.
	c := env.conf
	c.SourcesJSON = strings.Replace(c.SourcesJSON, `"provider":"stripe"`, `"provider":"stripe","replay_guard":true`, 1)
	hg, err := buildHandlers(env.withConf(c), cfg)
	if err != nil {
		return err
	}
	guard := add("receiver: new event, replay guard on (payload always)", "3 (DynamoDB; DynamoDB; then payload ∥ SQS)")
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), env.conf.LedgerOptions())
	if err != nil {
		return err
	}
	snd := &queue.Sender{API: sqs.NewFromConfig(cfg), URL: env.queueURL}
	seq := add("record, payload, enqueue in sequence (the receiver before this change, rebuilt from the same calls)", "3 (DynamoDB; DynamoDB; SQS)")
	for range n {
		req := benchRequest(testbody.JSON("evt_lat_g_"+cli.RandomHex(10), size))
		if err := timed(guard, func() error { return handle(hg, req, receiver.Accepted) }); err != nil {
			return err
		}
		body := testbody.JSON("evt_lat_s_"+cli.RandomHex(10), size)
		id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_lat_s_" + cli.RandomHex(10)}
		if err := timed(seq, func() error {
			if _, _, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: "x"}); err != nil {
				return err
			}
			if err := l.PutPayload(ctx, id, body, "x"); err != nil {
				return err
			}
			return snd.Send(ctx, queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.paid", SHA256: "x", Body: body})
		}); err != nil {
			return err
		}
	}
	// A 2 MB body through the S3 payload store.
	c = env.conf
	c.PayloadBucket, c.PayloadPrefix, c.MaxBody = bucket, config.DefaultPayloadPrefix, config.MaxBodyWithStore
	hs, err := buildHandlers(env.withConf(c), cfg)
	if err != nil {
		return err
	}
	large := add("receiver: new 2 MB event, S3 payload store", "2 (DynamoDB; then S3 ∥ SQS)")
	for range max(n/5, 5) {
		req := benchRequest(largeBody("evt_lat_l_"+cli.RandomHex(10), 2<<20))
		if err := timed(large, func() error { return handle(hs, req, receiver.Accepted) }); err != nil {
			return err
		}
	}
	if err := drain(ctx, sq, env.queueURL); err != nil {
		return err
	}

	t := &bench.MD{Title: fmt.Sprintf("Ack latency with AWS latency injected (per request: DynamoDB 5–10 ms, SQS 10–20 ms, S3 100–200 ms; %d events each, 3 KB unless said)", n),
		Header: []string{"path", "sequential round trips", "p50 ms", "p99 ms", "mean ms"}}
	for _, s := range rows {
		mean := 0.0
		for _, v := range s.ms {
			mean += v
		}
		mean /= math.Max(1, float64(len(s.ms)))
		t.Add(s.name, s.rts, bench.Percentile(s.ms, 50), bench.Percentile(s.ms, 99), mean)
	}
	t.Notes = append([]string{
		"The handlers run against the local emulator with lab/latency adding a uniform wait per request (per attempt, before it is sent) from these published figures:"},
		latency.Sources()...)
	t.Notes = append(t.Notes, "The emulator's own time (1–2 ms a call on this machine) comes on top. ∥ marks calls made at the same time: the sender waits for the slower. "+
		"The round-trip target (at most two sequential round trips on the new-event path) is met when the new-event rows sit near two round trips (about 20–30 ms), not three (about 30–40 ms).")
	t.Print(b.out)
	return nil
}

// drain empties a queue (unmetered).
func drain(ctx context.Context, sq *sqs.Client, url string) error {
	for range 50 {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil {
			return err
		}
		if len(out.Messages) == 0 {
			return nil
		}
		for _, m := range out.Messages {
			sq.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
		}
	}
	return nil
}
