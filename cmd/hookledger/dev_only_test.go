package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// TestDevRunsOnlyTheReceiver: `dev --only receiver` is a front door alone,
// the way to stage an outage of the rest: it accepts a signed event and
// writes its record and its message, and builds no processor (its effects
// and their settings are not read). That Run starts no poller and no
// reclaimer without their handlers is TestRunLeavesOutTheMissingParts.
func TestDevRunsOnlyTheReceiver(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{VisibilityTimeout: 20})
	c := devEnv(t, table, qurl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(t.Context())
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dev", "--only", "receiver", "--addr", addr, "--reclaim-every", "10ms"}, &out, &errb)
	}()
	for deadline := time.Now().Add(20 * time.Second); ; { // wait for the receiver to listen
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("dev exited %d:\n%s", code, errb.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("dev --only receiver did not serve on %s\n%s", addr, errb.String())
		}
	}
	v, _ := webhook.New(webhook.Config{Provider: "stripe"})
	body := cli.SampleInvoice("evt_dev_only", 4200)
	hdr, _ := v.Sign(webhook.Message{Body: body, Now: time.Now()}, "whsec_dev_dlq")
	status, result, err := cli.Post(ctx, http.DefaultClient, "http://"+addr+"/webhooks/stripe/acme", hdr, body)
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("dev exited %d: %s", code, errb.String())
	}
	if err != nil || status/100 != 2 {
		t.Fatalf("delivery: %d %s %v", status, result, err)
	}
	for _, want := range []string{`"parts":"receiver"`, `"routes":[]`, `"effect_settings":[]`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the start line lacks %s:\n%s", want, out.String())
		}
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_dev_only"}); err != nil || rec.Status != ledger.Received {
		t.Fatalf("record %+v, %v; want received", rec, err)
	}
	if bodies := awstest.Drain(t, sqs.NewFromConfig(cfg), qurl); len(bodies) != 1 {
		t.Fatalf("queue after dev stopped: %d messages; want the event's one", len(bodies))
	}
}
