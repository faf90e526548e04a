// Package awstest connects tests to a local AWS emulator (MiniStack or
// LocalStack): SDK config, throwaway tables, queues and buckets, a request
// meter and injected SQS batch failures. No Lambda links it; the lab keeps
// the pricing (lab/units).
//
// It never reaches real AWS: the endpoint must be a loopback address.
// Without one, integration tests skip, or fail when
// HOOKLEDGER_REQUIRE_EMULATOR=1 (make test sets it, so CI never skips).
package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// Endpoint returns the emulator's URL from HOOKLEDGER_TEST_ENDPOINT or
// AWS_ENDPOINT_URL, skipping (or failing, see the package doc) without one.
func Endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv("HOOKLEDGER_TEST_ENDPOINT")
	if ep == "" {
		ep = os.Getenv("AWS_ENDPOINT_URL")
	}
	if ep == "" {
		if os.Getenv("HOOKLEDGER_REQUIRE_EMULATOR") == "1" {
			t.Fatal("HOOKLEDGER_REQUIRE_EMULATOR=1 but no emulator endpoint: set HOOKLEDGER_TEST_ENDPOINT=http://localhost:4566 (make test starts MiniStack and does this)")
		}
		t.Skip("integration test: no emulator endpoint; run `make test`, or start MiniStack and set HOOKLEDGER_TEST_ENDPOINT=http://localhost:4566")
	}
	u, err := url.Parse(ep)
	if err != nil {
		t.Fatalf("emulator endpoint %q: %v", ep, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		t.Fatalf("emulator endpoint %q is not a loopback address; tests never reach real AWS", ep)
	}
	return ep
}

// Config returns an SDK config for the emulator with dummy credentials.
// Extra API options (a meter, fault injection) apply to every client made
// from it.
func Config(t testing.TB, apiOptions ...func(*middleware.Stack) error) aws.Config {
	t.Helper()
	ep := Endpoint(t)
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(ep),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithAPIOptions(apiOptions),
	)
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	return cfg
}

// Name returns a unique resource name with prefix.
func Name(prefix string) string {
	var b [5]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// Table creates a fresh ledger table with the production schema and returns
// its name.
func Table(t testing.TB, cfg aws.Config) string {
	t.Helper()
	name := Name("hl-test")
	if err := ledger.CreateTable(t.Context(), dynamodb.NewFromConfig(cfg), name); err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() {
		dynamodb.NewFromConfig(cfg).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name})
	})
	return name
}

// Queues creates a fresh queue and DLQ and returns their URLs.
func Queues(t testing.TB, cfg aws.Config, spec queue.QueueSpec) (queueURL, dlqURL string) {
	t.Helper()
	if spec.Name == "" {
		spec.Name = Name("hl-test")
	}
	client := sqs.NewFromConfig(cfg)
	q, d, err := queue.CreateQueues(t.Context(), client, spec)
	if err != nil {
		t.Fatalf("create queues: %v", err)
	}
	t.Cleanup(func() {
		client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &q})
		client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: &d})
	})
	return q, d
}

// Bucket creates a fresh S3 bucket (the payload store) and returns its
// name; the cleanup deletes its objects and the bucket.
func Bucket(t testing.TB, cfg aws.Config) string {
	t.Helper()
	name := Name("hl-test")
	client := blob.NewClient(cfg)
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		if out, err := client.ListObjectsV2(bg, &s3.ListObjectsV2Input{Bucket: &name}); err == nil {
			for _, o := range out.Contents {
				client.DeleteObject(bg, &s3.DeleteObjectInput{Bucket: &name, Key: o.Key})
			}
		}
		client.DeleteBucket(bg, &s3.DeleteBucketInput{Bucket: &name})
	})
	return name
}

// drainVisibility is how long Drain hides what it received, in seconds.
const drainVisibility = 5

// Drain receives and deletes every message on url and returns their
// bodies. The emulator sometimes cuts a ReceiveMessage answer short; the
// SDK retries, and the messages of the lost answer stay in flight, unseen,
// until their visibility timeout ends. So Drain hides what it receives only
// briefly and stops only when nothing is visible or in flight, or after a
// bound (a queue that never settles then shows in the caller's counts).
func Drain(t testing.TB, client *sqs.Client, url string) []string {
	t.Helper()
	var bodies []string
	for _, m := range DrainMessages(t, client, url) {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	return bodies
}

// DrainMessages is Drain returning the messages, with their trace header
// (the AWSTraceHeader system attribute) where they carry one.
func DrainMessages(t testing.TB, client *sqs.Client, url string) []sqstypes.Message {
	t.Helper()
	ctx := context.Background()
	var msgs []sqstypes.Message
	// A message whose delete the emulator dropped under load comes back
	// after drainVisibility: it is still one message.
	seen := map[string]bool{}
	deadline := time.Now().Add(4 * drainVisibility * time.Second)
	for empty := 0; ; {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, VisibilityTimeout: drainVisibility,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAWSTraceHeader}})
		if err != nil {
			t.Fatalf("drain %s: %v", url, err)
		}
		for _, m := range out.Messages {
			if !seen[aws.ToString(m.MessageId)] {
				seen[aws.ToString(m.MessageId)] = true
				msgs = append(msgs, m)
			}
			client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle})
		}
		if len(out.Messages) > 0 {
			empty = 0
			continue
		}
		if empty++; empty < 2 {
			continue
		}
		attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		if err != nil || attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] == "0" || time.Now().After(deadline) {
			return msgs
		}
		time.Sleep(500 * time.Millisecond)
	}
}
