package receiver_test

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// storedExpiry reads an item's expires_at as DynamoDB holds it.
func storedExpiry(t *testing.T, db *dynamodb.Client, table, pk, sk string) time.Time {
	t.Helper()
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := out.Item["expires_at"].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("%s/%s: no expires_at in %v", pk, sk, out.Item)
	}
	sec, _ := strconv.ParseInt(n.Value, 10, 64)
	return time.Unix(sec, 0)
}

// The deployed wiring: FromConfig gives each source its retention. With
// HOOKLEDGER_RETENTION=24h a Stripe record lives 3 days (Stripe's retry
// horizon) plus the one-day margin, a source with its own "retention" gets
// exactly that, and each payload expires with its record. The cold start
// logs every source's retention and why.
func TestFromConfigGivesEachSourceItsRetention(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	c, err := config.Load(func(k string) string {
		return map[string]string{
			"HOOKLEDGER_TABLE": table, "HOOKLEDGER_QUEUE_URL": qurl, "HOOKLEDGER_RETENTION": "24h",
			// Every body stored as it arrives, so the payload's expiry can be read.
			"HOOKLEDGER_PAYLOAD": "always",
			"HOOKLEDGER_SOURCES": `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:` + stripeSecret + `"]}}},
				"billing":{"provider":"stripe","retention":"240h","tenants":{"acme":{"secrets":["literal:` + stripeSecret + `"]}}}}`,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h, err := receiver.FromConfig(c, cfg, func(string) string { return "" }, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"source":"stripe","retention":"96h0m0s","reason":"HOOKLEDGER_RETENTION 24h raised to the stripe retry horizon 72h plus 24h"`,
		`"source":"billing","retention":"240h0m0s","reason":"configured"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("cold-start log does not say %s:\n%s", want, logs.String())
		}
	}
	sv, _ := webhook.New(webhook.Config{Provider: "stripe"})
	db := dynamodb.NewFromConfig(cfg)
	for _, tc := range []struct {
		source string
		want   time.Duration
	}{{"stripe", 96 * time.Hour}, {"billing", 240 * time.Hour}} {
		f := fixture{clock: fakeclock.New(time.Now().UTC())}
		req := f.request(t, sv, "/webhooks/"+tc.source+"/acme", stripeSecret, webhook.Message{Body: stripeBody("evt_ret_" + tc.source)})
		before := time.Now()
		resp, err := h.Handle(t.Context(), req)
		after := time.Now()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s %v", tc.source, resp.StatusCode, resp.Body, err)
		}
		id := ledger.Key{Source: tc.source, Tenant: "acme", ID: "evt_ret_" + tc.source}
		rec := storedExpiry(t, db, table, id.PK(), "r")
		if lo, hi := before.Add(tc.want).Truncate(time.Second), after.Add(tc.want); rec.Before(lo) || rec.After(hi) {
			t.Errorf("%s: record expires %v, want created + %v (%v..%v)", tc.source, rec, tc.want, lo, hi)
		}
		if pay := storedExpiry(t, db, table, id.PK(), "p"); pay.Before(rec) || pay.Sub(rec) > 2*time.Second {
			t.Errorf("%s: payload expires %v, record %v: want them together, never the payload first", tc.source, pay, rec)
		}
	}
}

// A Stripe delivery retried inside its window is a duplicate, whatever the
// (shorter) global retention; once the window passed it is a new event.
func TestStripeRetryWithinItsHorizonIsADuplicate(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	srcs, err := source.Parse([]byte(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:` + stripeSecret + `"]}}},
		"billing":{"provider":"stripe","retention":"240h","tenants":{"acme":{"secrets":["literal:` + stripeSecret + `"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := source.NewRegistry(srcs, &source.Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	perSource := map[string]time.Duration{}
	for name, r := range reg.Retentions(24 * time.Hour) {
		perSource[name] = r.Duration
	}
	clock := fakeclock.New(time.Now().UTC())
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table, Retention: 24 * time.Hour, SourceRetention: perSource, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	sv, _ := webhook.New(webhook.Config{Provider: "stripe"})
	f := fixture{clock: clock, stripe: sv,
		h: &receiver.Handler{Sources: reg, Ledger: l, Queue: &queue.Sender{API: sqs.NewFromConfig(cfg), URL: qurl}, Now: clock.Now}}
	// Each delivery is signed at the fake clock's time, as Stripe signs its retries afresh.
	deliver := func(src string) string {
		t.Helper()
		resp := f.handle(t, f.request(t, sv, "/webhooks/"+src+"/acme", stripeSecret, webhook.Message{Body: stripeBody("evt_window")}))
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", src, resp.StatusCode, resp.Body)
		}
		return resp.Headers["X-Hookledger-Result"]
	}
	if got := deliver("stripe") + " " + deliver("billing"); got != "accepted accepted" {
		t.Fatalf("first deliveries: %s", got)
	}
	clock.Advance(95 * time.Hour) // past the global 24h, inside 3 days + 1
	if got := deliver("stripe"); got != string(receiver.Requeued) && got != string(receiver.Duplicate) {
		t.Errorf("stripe retry at 95h: %s, want a duplicate (its record lives 96h)", got)
	}
	clock.Advance(time.Hour + time.Second)
	if got := deliver("stripe"); got != string(receiver.Accepted) {
		t.Errorf("stripe at 96h: %s, want accepted as new once its window passed", got)
	}
	if got := deliver("billing"); got != string(receiver.Requeued) && got != string(receiver.Duplicate) {
		t.Errorf("billing at 96h: %s, want a duplicate (its own retention is 240h)", got)
	}
	clock.Advance(144 * time.Hour)
	if got := deliver("billing"); got != string(receiver.Accepted) {
		t.Errorf("billing at 240h: %s, want accepted as new", got)
	}
}

// A source whose records outlive the S3 payload store's lifecycle rule would
// lose the bodies kept there first: the cold start refuses it, naming the
// source and the fix.
func TestFromConfigRefusesARetentionThePayloadStoreForgets(t *testing.T) {
	t.Parallel()
	c, err := config.Load(func(k string) string {
		return map[string]string{
			"HOOKLEDGER_QUEUE_URL": "http://localhost:4566/000000000000/q", "HOOKLEDGER_RETENTION": "48h",
			"HOOKLEDGER_PAYLOAD_BUCKET": "payloads", "HOOKLEDGER_PAYLOAD_STORE_DAYS": "7",
			"HOOKLEDGER_SOURCES": `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_x"]}}},
				"github":{"provider":"github","retention":"240h","tenants":{"acme":{"secrets":["literal:x"]}}}}`,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = receiver.FromConfig(c, aws.Config{Region: "us-east-1"}, func(string) string { return "" }, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), `source "github"`) || !strings.Contains(err.Error(), "LargeBodyStoreDays to at least 10") ||
		strings.Contains(err.Error(), `source "stripe"`) {
		t.Fatalf("FromConfig: %v; want github (240h > 7 days) refused with the fix, stripe (96h) not", err)
	}
}
