package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/local"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// devWithoutEffects is `hookledger dev` with no routes: these tests are
// about the pipeline, so they run whatever effect/ holds and whichever
// settings it reads.
var devWithoutEffects = local.DevCommand{Program: "hookledger",
	Register: func(*hookledger.Router, *hookledger.Settings) error { return nil }}

// devEnv sets what the README's local flow exports, HOOKLEDGER_DLQ_URL
// left unset as `hookledger setup` used to leave it.
func devEnv(t *testing.T, table, queueURL string) config.Config {
	t.Helper()
	env := map[string]string{"HOOKLEDGER_TABLE": table, "HOOKLEDGER_QUEUE_URL": queueURL, "HOOKLEDGER_DLQ_URL": "",
		"LOG_LEVEL": "info", "AWS_ENDPOINT_URL": awstest.Endpoint(t),
		"HOOKLEDGER_SOURCES": `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_dev_dlq"]}}}}`}
	for k, v := range env {
		t.Setenv(k, v)
	}
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDevTakesBackTheDeadLetterQueue: `hookledger dev` without
// HOOKLEDGER_DLQ_URL finds the DLQ from the queue's redrive policy, so its
// reclaimer reads it as the deployed one does. Before, it never did: a
// spent copy of a finished event stayed on the DLQ (and a body only the DLQ
// held was never taken back).
func TestDevTakesBackTheDeadLetterQueue(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, dlq := awstest.Queues(t, cfg, queue.QueueSpec{VisibilityTimeout: 20})
	c := devEnv(t, table, qurl)

	// A finished event whose message the DLQ still holds: the DLQ pass
	// deletes it.
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	body := cli.SampleInvoice("evt_dev_dlq", 4200)
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_dev_dlq"}
	if _, _, err := l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: digest}); err != nil {
		t.Fatal(err)
	}
	lease, err := l.Claim(t.Context(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Complete(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	msg, err := queue.Encode(queue.Message{Source: id.Source, Tenant: id.Tenant, ID: id.ID, Type: "invoice.paid", SHA256: digest, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	sq := sqs.NewFromConfig(cfg)
	if _, err := sq.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &dlq, MessageBody: &msg}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- devWithoutEffects.Run(ctx, []string{"--addr", "127.0.0.1:0", "--reclaim-every", "1s", "--function-timeout", "10s"}, &out, &errb)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for depth(t, sq, dlq) > 0 {
		select {
		case code := <-done:
			cancel()
			t.Fatalf("dev exited %d:\n%s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the DLQ still holds the message after 30s: dev's reclaimer does not read it\n%s", out.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("dev exited %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"dlq_url":"`+dlq+`"`) {
		t.Errorf("dev's start line does not name the DLQ it found:\n%s", out.String())
	}
}

// depth is the DLQ's messages, visible or in flight.
func depth(t *testing.T, sq *sqs.Client, url string) int {
	t.Helper()
	a, err := sq.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range a.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}

// TestDevRefusesAQueueWithoutADeadLetterQueue: with no redrive policy
// there is no DLQ to read, and dev says how to get one instead of running
// a pipeline that drops what the processor keeps failing.
func TestDevRefusesAQueueWithoutADeadLetterQueue(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	sq := sqs.NewFromConfig(cfg)
	q, err := sq.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(awstest.Name("hl-nodlq"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
	devEnv(t, table, *q.QueueUrl)
	var errb bytes.Buffer
	// Bounded: a dev that does not refuse would serve until ctx ends.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	code := devWithoutEffects.Run(ctx, []string{"--addr", "127.0.0.1:0"}, &bytes.Buffer{}, &errb)
	if code != 2 || !strings.Contains(errb.String(), "has no RedrivePolicy") || !strings.Contains(errb.String(), "hookledger setup") ||
		!strings.Contains(errb.String(), "HOOKLEDGER_DLQ_URL") {
		t.Errorf("exit %d, stderr %q; want 2 and a message naming hookledger setup and HOOKLEDGER_DLQ_URL", code, errb.String())
	}
}

// TestSetupExportsTheDeadLetterQueue: `eval "$(hookledger setup)"` sets
// HOOKLEDGER_DLQ_URL (it was printed as a comment), to the queue's redrive
// target.
func TestSetupExportsTheDeadLetterQueue(t *testing.T) {
	cfg := awstest.Config(t)
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	name := awstest.Name("hl-setup")
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"setup", "--table", name, "--queue", name}, &out, &errb); code != 0 {
		t.Fatalf("setup: exit %d: %s", code, errb.String())
	}
	sq := sqs.NewFromConfig(cfg)
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || !strings.HasPrefix(line, "export ") {
			t.Errorf("setup printed %q, which is not an export", line)
			continue
		}
		exports[k] = v
	}
	t.Cleanup(func() {
		dynamodb.NewFromConfig(cfg).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name})
		for _, k := range []string{"HOOKLEDGER_QUEUE_URL", "HOOKLEDGER_DLQ_URL"} {
			if u := exports[k]; u != "" {
				sq.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &u})
			}
		}
	})
	if exports["HOOKLEDGER_TABLE"] != name || exports["HOOKLEDGER_QUEUE_URL"] == "" || exports["HOOKLEDGER_DLQ_URL"] == "" {
		t.Fatalf("setup exports %v, want HOOKLEDGER_TABLE, HOOKLEDGER_QUEUE_URL and HOOKLEDGER_DLQ_URL", exports)
	}
	found, err := local.DeadLetterQueueURL(t.Context(), sq, exports["HOOKLEDGER_QUEUE_URL"])
	if err != nil || found != exports["HOOKLEDGER_DLQ_URL"] {
		t.Errorf("the queue redrives to %q (%v), setup exported HOOKLEDGER_DLQ_URL=%s", found, err, exports["HOOKLEDGER_DLQ_URL"])
	}
}
