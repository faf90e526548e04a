//go:build e2e

// End-to-end test of the idempotency examples, deployed by
// lab/scripts/e2e-examples.sh into the emulator: the HTTP API replays orders,
// the SQS consumer ships each order once.
package example_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/idempotency"
)

type env struct {
	ordersURL, idemTable, ordersTable, queueURL, shipFunction string
	http                                                      *http.Client
	db                                                        *dynamodb.Client
	sqs                                                       *sqs.Client
	lambda                                                    *lambda.Client
	run                                                       string
}

func setup(t *testing.T) *env {
	t.Helper()
	get := func(k string) string {
		v := os.Getenv(k)
		if v == "" {
			t.Fatalf("%s is not set: run lab/scripts/e2e-examples.sh", k)
		}
		return v
	}
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL is not set: refusing to touch real AWS")
	}
	cfg, err := config.LoadDefaultConfig(t.Context()) // the script sets the endpoint, region and dummy credentials
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".localhost") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return &env{
		ordersURL: get("IDEM_E2E_ORDERS_URL"), idemTable: get("IDEM_E2E_IDEMPOTENCY_TABLE"), ordersTable: get("IDEM_E2E_ORDERS_TABLE"),
		queueURL: get("IDEM_E2E_QUEUE_URL"), shipFunction: get("IDEM_E2E_SHIP_FUNCTION"),
		http: &http.Client{Timeout: 30 * time.Second, Transport: tr},
		db:   dynamodb.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg), lambda: lambda.NewFromConfig(cfg),
		run: fmt.Sprint(time.Now().UnixNano()),
	}
}

type answer struct {
	status   int
	replayed string
	body     map[string]string
}

func (e *env) post(t *testing.T, key, body string) answer {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.ordersURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, replayed: resp.Header.Get(idempotency.ReplayedHeader)}
	if err := json.Unmarshal(b, &a.body); err != nil {
		t.Fatalf("POST answered %d %q", resp.StatusCode, b)
	}
	return a
}

// ordersFor counts the orders the API created for one Idempotency-Key.
func (e *env) ordersFor(t *testing.T, key string) []map[string]types.AttributeValue {
	t.Helper()
	k, _ := idempotency.KeyOf("create-order", key)
	out, err := e.db.Scan(t.Context(), &dynamodb.ScanInput{
		TableName: &e.ordersTable, FilterExpression: aws.String("idempotency_key = :k"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: k}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

func TestAPIRepeatReturnsTheStoredOrder(t *testing.T) {
	e := setup(t)
	key := "key-" + e.run
	body := `{"sku":"tea","qty":2}`
	first := e.post(t, key, body)
	if first.status != 201 || first.body["order_id"] == "" || first.replayed != "" {
		t.Fatalf("first POST: %+v", first)
	}
	again := e.post(t, key, `{ "qty": 2, "sku": "tea" }`) // same order, spelt differently
	if again.status != 201 || again.body["order_id"] != first.body["order_id"] || again.replayed != "true" {
		t.Fatalf("repeat POST: %+v, want the first answer with %s: true", again, idempotency.ReplayedHeader)
	}
	if n := len(e.ordersFor(t, key)); n != 1 {
		t.Fatalf("%d orders for one key", n)
	}
	if other := e.post(t, key, `{"sku":"tea","qty":3}`); other.status != 422 {
		t.Fatalf("same key, another order: %+v, want 422", other)
	}
	if none := e.post(t, "", body); none.status != 400 {
		t.Fatalf("no key: %+v, want 400", none)
	}
	if bad := e.post(t, "bad-"+e.run, `{"sku":""}`); bad.status != 400 || e.post(t, "bad-"+e.run, `{"sku":""}`).replayed != "true" {
		t.Fatalf("a bad request is an answer too, replayed: %+v", bad)
	}
}

func TestAPIConcurrentRetriesCreateOneOrder(t *testing.T) {
	e := setup(t)
	key := "conc-" + e.run
	const n = 8
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = e.post(t, key, `{"sku":"mug","qty":1}`) })
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, a := range answers {
		switch a.status {
		case 201:
			ids[a.body["order_id"]] = true
		case 409:
		default:
			t.Fatalf("concurrent POST: %+v", a)
		}
	}
	if len(ids) != 1 || len(e.ordersFor(t, key)) != 1 {
		t.Fatalf("order ids %v, orders stored %d; want one", ids, len(e.ordersFor(t, key)))
	}
}

func (e *env) shipments(t *testing.T, orderID string) (int, string) {
	t.Helper()
	out, err := e.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &e.ordersTable, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"order_id": &types.AttributeValueMemberS{Value: orderID}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if v, ok := out.Item["shipments"].(*types.AttributeValueMemberN); ok {
		fmt.Sscan(v.Value, &n)
	}
	st, _ := out.Item["status"].(*types.AttributeValueMemberS)
	if st == nil {
		return n, ""
	}
	return n, st.Value
}

func (e *env) waitShipped(t *testing.T, orderID string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if n, _ := e.shipments(t, orderID); n > 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("order %s not shipped within 90s (is the SQS event source running?)", orderID)
}

// queueDrained waits until the orders queue holds nothing, in flight
// included, so a message sent before has been handled.
func (e *env) queueDrained(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		out, err := e.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &e.queueURL,
			AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatal("orders queue not drained within 90s")
}

// TestSQSRedeliveryShipsOnce: the order the API queued ships once; the
// same message delivered again, and a second message for the same order
// (a producer's duplicate), ship nothing more.
func TestSQSRedeliveryShipsOnce(t *testing.T) {
	e := setup(t)
	created := e.post(t, "ship-"+e.run, `{"sku":"kettle","qty":1}`)
	if created.status != 201 {
		t.Fatalf("POST: %+v", created)
	}
	id := created.body["order_id"]
	e.waitShipped(t, id)
	e.queueDrained(t)
	body := fmt.Sprintf(`{"order_id":%q}`, id)

	// A redelivery, as the event source mapping hands it to the function.
	ev, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: "redelivered-" + e.run, Body: body, EventSource: "aws:sqs",
		EventSourceARN: "arn:aws:sqs:us-east-1:000000000000:orders",
	}}})
	out, err := e.lambda.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: &e.shipFunction, Payload: ev})
	if err != nil || out.FunctionError != nil {
		t.Fatalf("invoke: %v %s", err, out.Payload)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out.Payload, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery answered %s", out.Payload)
	}

	// A producer's duplicate through the queue.
	if _, err := e.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &e.queueURL, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}
	e.queueDrained(t)
	if n, status := e.shipments(t, id); n != 1 || status != "shipped" {
		t.Fatalf("order %s: %d shipments (status %s), want exactly 1", id, n, status)
	}
	k, _ := idempotency.KeyOf("ship-order", id)
	rec, err := e.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &e.idemTable, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "idem#" + k}, "sk": &types.AttributeValueMemberS{Value: "idem"}}})
	if err != nil || rec.Item == nil {
		t.Fatalf("idempotency record %s: %v", k, err)
	}
	if st := rec.Item["status"].(*types.AttributeValueMemberS).Value; st != "done" {
		t.Fatalf("idempotency record status %s", st)
	}
}
