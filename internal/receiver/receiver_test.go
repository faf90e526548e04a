package receiver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

const (
	stripeSecret = "whsec_test_acme_0123456789"
	otherSecret  = "whsec_test_globex_9876543210"
	githubSecret = "gh-secret-acme"
)

type fixture struct {
	h      *receiver.Handler
	l      *ledger.Ledger
	meter  *awstest.Meter
	clock  *fakeclock.Clock
	sqs    *sqs.Client
	db     *dynamodb.Client
	table  string
	queue  string
	stripe *webhook.Verifier
	github *webhook.Verifier
}

// setup builds a receiver on a fresh table and queue in the emulator, with a
// request meter on every AWS client and an injected clock.
func setup(t *testing.T) fixture { return setupWith(t, nil, &source.Secrets{}) }

// setupWith is setup with more sources (added to stripe and github) and the
// given secret resolver.
func setupWith(t *testing.T, extra map[string]source.Source, secrets *source.Secrets) fixture {
	t.Helper()
	m := awstest.NewMeter()
	cfg := awstest.Config(t, m.APIOption)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{})
	c := fakeclock.New(time.Now().UTC())
	db := dynamodb.NewFromConfig(cfg)
	l, err := ledger.New(db, ledger.Options{Table: table, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]source.Source{
		"stripe": {Config: webhook.Config{Provider: "stripe"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:" + stripeSecret}}, "globex": {Secrets: []string{"literal:" + otherSecret}}}},
		"github": {Config: webhook.Config{Provider: "github"}, Tenants: map[string]source.Tenant{
			"acme": {Secrets: []string{"literal:" + githubSecret}}}},
	}
	for k, v := range extra {
		srcs[k] = v
	}
	reg, err := source.NewRegistry(srcs, secrets)
	if err != nil {
		t.Fatal(err)
	}
	sq := sqs.NewFromConfig(cfg)
	// Always, so that a test reads every accepted body back; the tests of
	// on-trouble, the default, set it.
	h := &receiver.Handler{Sources: reg, Ledger: l, Queue: &queue.Sender{API: sq, URL: qurl}, MaxBody: 4096, Payload: config.PayloadAlways, Now: c.Now}
	sv, _ := webhook.New(webhook.Config{Provider: "stripe"})
	gv, _ := webhook.New(webhook.Config{Provider: "github"})
	m.Reset()
	return fixture{h: h, l: l, meter: m, clock: c, sqs: sq, db: db, table: table, queue: qurl, stripe: sv, github: gv}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func stripeBody(id string) []byte {
	return []byte(`{"id":"` + id + `","type":"invoice.paid","data":{"object":{"amount_paid":4900,"currency":"usd"}}}`)
}

// request builds the API Gateway event for a delivery signed with secret.
func (f fixture) request(t *testing.T, v *webhook.Verifier, path, secret string, msg webhook.Message) events.APIGatewayV2HTTPRequest {
	t.Helper()
	if msg.Now.IsZero() {
		msg.Now = f.clock.Now()
	}
	hdr, err := v.Sign(msg, secret)
	if err != nil {
		t.Fatal(err)
	}
	req := events.APIGatewayV2HTTPRequest{RawPath: path, Headers: map[string]string{}, Body: string(msg.Body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "hooks.example.com",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost}}}
	if parts := strings.Split(strings.Trim(path, "/"), "/"); len(parts) == 3 {
		req.PathParameters = map[string]string{"source": parts[1], "tenant": parts[2]}
	}
	for k := range hdr {
		req.Headers[strings.ToLower(k)] = hdr.Get(k)
	}
	return req
}

func (f fixture) stripeReq(t *testing.T, tenant, secret, id string) events.APIGatewayV2HTTPRequest {
	return f.request(t, f.stripe, "/webhooks/stripe/"+tenant, secret, webhook.Message{Body: stripeBody(id)})
}

func (f fixture) handle(t *testing.T, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := f.h.Handle(t.Context(), req)
	if err != nil {
		t.Fatalf("Handle returned an error: %v", err)
	}
	return resp
}

// queued drains the queue and returns how many messages it held.
func (f fixture) queued(t *testing.T) int {
	t.Helper()
	return len(awstest.Drain(t, f.sqs, f.queue))
}

func (f fixture) items(t *testing.T) int32 {
	t.Helper()
	out, err := f.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: &f.table, Select: "COUNT"})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

func TestNewEventStoresRecordPayloadAndOneMessage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	resp := f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_new"))
	if resp.StatusCode != 200 || resp.Body != `{"status":"accepted"}` {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if line := emf.String(); line != "" {
		t.Errorf("metrics %q for an accepted event; the happy path writes no custom metric (each costs $0.30 a month while it receives data)", line)
	}
	snap := f.meter.Snapshot()
	if snap["DynamoDB.PutItem"] != 2 || snap["SQS.SendMessage"] != 1 || len(snap) != 2 {
		t.Errorf("new event cost %v, want 2 PutItem (record, payload) and 1 SendMessage", snap)
	}
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_new"})
	if err != nil || rec.Status != ledger.Received || rec.EventType != "invoice.paid" {
		t.Fatalf("record %+v %v", rec, err)
	}
	body, err := f.l.Payload(t.Context(), rec.Key)
	if err != nil || string(body) != string(stripeBody("evt_new")) {
		t.Fatalf("payload %q %v", body, err)
	}
	if n := f.queued(t); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

func TestBase64BodyIsVerifiedOverDecodedBytes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	req := f.stripeReq(t, "acme", stripeSecret, "evt_b64")
	req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(req.Body)), true
	if resp := f.handle(t, req); resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	body, err := f.l.Payload(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_b64"})
	if err != nil || string(body) != string(stripeBody("evt_b64")) {
		t.Fatalf("stored %q %v, want the decoded body", body, err)
	}
}

func TestConcurrentDeliveriesOneAcceptedOneMessage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	req := f.stripeReq(t, "acme", stripeSecret, "evt_burst")
	const n = 50
	results := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, _ := f.h.Handle(context.Background(), req)
			results <- resp.Headers["X-Hookledger-Result"]
		})
	}
	wg.Wait()
	close(results)
	counts := map[string]int{}
	for r := range results {
		counts[r]++
	}
	if counts["accepted"] != 1 || counts["duplicate"] != n-1 {
		t.Fatalf("results %v, want 1 accepted and %d duplicate", counts, n-1)
	}
	if got := f.meter.Snapshot()["SQS.SendMessage"]; got != 1 {
		t.Errorf("SendMessage calls = %d, want 1", got)
	}
	if got := f.queued(t); got != 1 {
		t.Errorf("queue holds %d messages, want 1", got)
	}
}

func TestDuplicateCostsOneDynamoDBRequestAndNoSQS(t *testing.T) {
	t.Parallel()
	f := setup(t)
	req := f.stripeReq(t, "acme", stripeSecret, "evt_dup")
	f.handle(t, req)
	// The event is being processed elsewhere, and later done: neither
	// duplicate may touch the queue.
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_dup"}
	rec, err := f.l.Claim(t.Context(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"processing", "done"} {
		if step == "done" {
			if _, err := f.l.Complete(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
		}
		f.meter.Reset()
		resp := f.handle(t, req)
		if resp.StatusCode != 200 || resp.Body != `{"status":"duplicate"}` {
			t.Fatalf("%s: got %d %s", step, resp.StatusCode, resp.Body)
		}
		if snap := f.meter.Snapshot(); f.meter.Service("DynamoDB") != 1 || f.meter.Service("SQS") != 0 {
			t.Errorf("%s duplicate cost %v, want exactly 1 DynamoDB request and no SQS request", step, snap)
		}
	}
}

func TestReceivedDuplicateIsRestoredAndRequeuedAfterGrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_orphan"}
	// A receiver died right after the record write: no payload, no message.
	if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "invoice.paid", BodySHA256: sha(stripeBody("evt_orphan"))}); err != nil {
		t.Fatal(err)
	}
	req := f.stripeReq(t, "acme", stripeSecret, "evt_orphan")
	f.meter.Reset()
	resp := f.handle(t, req)
	snap := f.meter.Snapshot()
	if resp.Headers["X-Hookledger-Result"] != "duplicate" || f.queued(t) != 0 {
		t.Fatalf("within the grace period a duplicate must not re-enqueue: %v", resp.Headers)
	}
	// ...but it must store the payload before answering 2xx: the sender will
	// not retry again, and without a payload the reclaimer cannot re-drive.
	if body, err := f.l.Payload(t.Context(), id); err != nil || string(body) != string(stripeBody("evt_orphan")) {
		t.Fatalf("payload not stored by the duplicate: %q %v", body, err)
	}
	if snap["DynamoDB.PutItem"] != 2 || len(snap) != 1 {
		t.Errorf("received duplicate cost %v, want 2 PutItem and no SQS", snap)
	}
	f.clock.Advance(receiver.DefaultRequeueAfter)
	resp = f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_orphan"))
	if resp.StatusCode != 200 || resp.Headers["X-Hookledger-Result"] != "duplicate_requeued" {
		t.Fatalf("got %d %v", resp.StatusCode, resp.Headers)
	}
	if n := f.queued(t); n != 1 {
		t.Errorf("queue holds %d, want the re-enqueued message", n)
	}
	if body, err := f.l.Payload(t.Context(), id); err != nil || string(body) != string(stripeBody("evt_orphan")) {
		t.Errorf("payload not restored: %q %v", body, err)
	}
}

func TestBodyMismatchPolicy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_mm"))
	other := f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{
		Body: []byte(`{"id":"evt_mm","type":"invoice.paid","data":{"object":{"amount_paid":999999,"currency":"usd"}}}`)})
	f.meter.Reset()
	var emf bytes.Buffer
	f.h.Metrics = metric.New(&emf, "test")
	if resp := f.handle(t, other); resp.StatusCode != 200 || resp.Headers["X-Hookledger-Result"] != "duplicate_body_mismatch" {
		t.Errorf("flag policy: %d %v", resp.StatusCode, resp.Headers)
	}
	// It needs a person: counted as BodyMismatch and as NeedsOperator, the
	// one metric NeedsOperatorAlarm watches.
	if line := emf.String(); !strings.Contains(line, `"BodyMismatch":1`) || !strings.Contains(line, `"NeedsOperator":1`) {
		t.Errorf("metrics %q, want BodyMismatch and NeedsOperator", line)
	}
	f.h.Mismatch = receiver.MismatchReject
	if resp := f.handle(t, other); resp.StatusCode != 409 {
		t.Errorf("reject policy: %d %s", resp.StatusCode, resp.Body)
	}
	if f.meter.Service("SQS") != 0 {
		t.Errorf("a mismatched duplicate touched the queue: %v", f.meter.Snapshot())
	}
}

func TestRejectedRequestsTouchNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	good := func() events.APIGatewayV2HTTPRequest { return f.stripeReq(t, "acme", stripeSecret, "evt_rej") }
	tests := []struct {
		name   string
		req    func() events.APIGatewayV2HTTPRequest
		status int
	}{
		{"bad signature", func() events.APIGatewayV2HTTPRequest {
			r := good()
			r.Body = strings.Replace(r.Body, "4900", "4901", 1)
			return r
		}, 401},
		{"missing signature", func() events.APIGatewayV2HTTPRequest {
			r := good()
			delete(r.Headers, "stripe-signature")
			return r
		}, 401},
		{"wrong secret", func() events.APIGatewayV2HTTPRequest { return f.stripeReq(t, "acme", "whsec_wrong", "evt_rej") }, 401},
		{"another tenant's valid signature", func() events.APIGatewayV2HTTPRequest {
			return f.stripeReq(t, "acme", otherSecret, "evt_rej")
		}, 401},
		{"stale timestamp", func() events.APIGatewayV2HTTPRequest {
			return f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: stripeBody("evt_rej"), Now: f.clock.Now().Add(-time.Hour)})
		}, 401},
		{"unknown tenant", func() events.APIGatewayV2HTTPRequest { return f.stripeReq(t, "initech", stripeSecret, "evt_rej") }, 404},
		{"unknown source", func() events.APIGatewayV2HTTPRequest {
			r := good()
			r.RawPath, r.PathParameters = "/webhooks/paypal/acme", map[string]string{"source": "paypal", "tenant": "acme"}
			return r
		}, 404},
		{"separator in tenant", func() events.APIGatewayV2HTTPRequest {
			r := good()
			r.PathParameters = map[string]string{"source": "stripe", "tenant": "acme#x"}
			return r
		}, 404},
		{"body over the limit", func() events.APIGatewayV2HTTPRequest {
			return f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: []byte(`{"id":"evt_big","pad":"` + strings.Repeat("x", 5000) + `"}`)})
		}, 413},
		{"invalid base64", func() events.APIGatewayV2HTTPRequest {
			r := good()
			r.Body, r.IsBase64Encoded = "!!not base64!!", true
			return r
		}, 400},
		{"malformed JSON", func() events.APIGatewayV2HTTPRequest {
			return f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: []byte(`{"id":`)})
		}, 400},
		{"no key", func() events.APIGatewayV2HTTPRequest {
			return f.request(t, f.stripe, "/webhooks/stripe/acme", stripeSecret, webhook.Message{Body: []byte(`{"type":"invoice.paid"}`)})
		}, 400},
		{"wrong method", func() events.APIGatewayV2HTTPRequest {
			r := good()
			r.RequestContext.HTTP.Method = http.MethodGet
			return r
		}, 405},
	}
	for _, tt := range tests {
		resp := f.handle(t, tt.req())
		if resp.StatusCode != tt.status {
			t.Errorf("%s: got %d %s, want %d", tt.name, resp.StatusCode, resp.Body, tt.status)
		}
		if strings.Contains(resp.Body, "ledger") || strings.Contains(resp.Body, "webhook:") {
			t.Errorf("%s: answer leaks internal text: %s", tt.name, resp.Body)
		}
	}
	if snap := f.meter.Snapshot(); f.meter.Service("DynamoDB") != 0 || f.meter.Service("SQS") != 0 {
		t.Errorf("rejected requests reached AWS: %v", snap)
	}
	if n := f.items(t); n != 0 {
		t.Errorf("table holds %d items after rejections", n)
	}
	if n := f.queued(t); n != 0 {
		t.Errorf("queue holds %d messages after rejections", n)
	}
}

func TestLedgerUnavailableAnswers503WithoutDetail(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l, _ := ledger.New(f.db, ledger.Options{Table: "no-such-table-" + f.table})
	f.h.Ledger = l
	resp := f.handle(t, f.stripeReq(t, "acme", stripeSecret, "evt_down"))
	if resp.StatusCode != 503 || resp.Body != `{"error":"temporarily unavailable, retry later"}` {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if n := f.queued(t); n != 0 {
		t.Errorf("queued %d with the ledger down", n)
	}
}

func TestQueueUnavailableAnswers503AndRetryRecovers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	good := f.h.Queue
	f.h.Queue = &queue.Sender{API: f.sqs, URL: f.queue + "-missing"}
	req := f.stripeReq(t, "acme", stripeSecret, "evt_q")
	if resp := f.handle(t, req); resp.StatusCode != 503 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	// The sender retries later; the record is still received, so the retry
	// re-enqueues once the grace period has passed.
	f.h.Queue = good
	f.clock.Advance(receiver.DefaultRequeueAfter)
	if resp := f.handle(t, req); resp.Headers["X-Hookledger-Result"] != "duplicate_requeued" {
		t.Fatalf("retry: %d %v", resp.StatusCode, resp.Headers)
	}
	if n := f.queued(t); n != 1 {
		t.Errorf("queue holds %d, want 1", n)
	}
}

func TestGitHubDeliveryKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	req := f.request(t, f.github, "/webhooks/github/acme", githubSecret, webhook.Message{ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958", Type: "push", Body: []byte(`{"ref":"refs/heads/main"}`)})
	if resp := f.handle(t, req); resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	rec, err := f.l.Get(t.Context(), ledger.Key{Source: "github", Tenant: "acme", ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958"})
	if err != nil || rec.EventType != "push" {
		t.Fatalf("%+v %v", rec, err)
	}
}
