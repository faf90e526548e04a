package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/idempotency/idempotencytest"
)

// exampleStore is what main builds with idempotency.NewStore(dynamodb
// client, Options{Table: ...}); examples run on the in-memory one.
func exampleStore() *idempotency.Store {
	s, _ := idempotency.NewStoreWith(idempotencytest.NewMemory(nil), idempotency.Options{Logger: slog.New(slog.DiscardHandler)})
	return s
}

// An API Gateway HTTP API handler keyed by the Idempotency-Key header,
// whose body must not change under one key, marking replays with a
// header.
func ExampleWrap() {
	store := exampleStore()
	created := 0
	createOrder := func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		created++
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: fmt.Sprintf(`{"order":"ord_%d"}`, created)}, nil
	}
	f, err := idempotency.Wrap(store, "create-order", createOrder, idempotency.Config[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse]{
		KeyPath:      "headers.idempotency-key",
		ValidatePath: "body",
		OnReplay:     idempotency.ReplayHeaderV2,
	})
	if err != nil {
		panic(err) // in main: log it and exit; the configuration is wrong
	}
	// lambda.Start(f.Handle)
	req := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"idempotency-key": "k-1"}, Body: `{"sku":"a"}`}
	for range 2 {
		resp, _ := f.Handle(context.Background(), req)
		fmt.Println(resp.StatusCode, resp.Body, "replayed:", resp.Headers[idempotency.ReplayedHeader] == "true")
	}
	// Output:
	// 201 {"order":"ord_1"} replayed: false
	// 201 {"order":"ord_1"} replayed: true
}

// Any function call, keyed by what identifies it.
func ExampleDo() {
	store := exampleStore()
	charge := func(ctx context.Context) (string, error) {
		call, _ := idempotency.CallFrom(ctx)
		_ = call.Key // pass it to the payments API as its idempotency key
		return "ch_1", nil
	}
	for range 2 {
		id, info, err := idempotency.Do(context.Background(), store, "charge", "order-42", charge)
		fmt.Println(id, info.Replayed(), err)
	}
	// Output:
	// ch_1 false <nil>
	// ch_1 true <nil>
}

// An SQS consumer: each message runs once per order id in its body, and
// only failed messages are redelivered.
func ExampleSQS() {
	store := exampleStore()
	fulfil := func(ctx context.Context, m events.SQSMessage) error {
		var o struct {
			OrderID string `json:"order_id"`
		}
		json.Unmarshal([]byte(m.Body), &o)
		fmt.Println("fulfilling", o.OrderID)
		return nil
	}
	h, err := idempotency.SQS(store, "fulfil-order", fulfil, idempotency.SQSConfig{
		Config: idempotency.Config[events.SQSMessage, struct{}]{KeyPath: "body.order_id"},
	})
	if err != nil {
		panic(err)
	}
	// lambda.Start(h.Handle)
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m-1", Body: `{"order_id":"o-7"}`},
		{MessageId: "m-2", Body: `{"order_id":"o-7"}`}, // sent twice by its producer
	}})
	fmt.Println("failures:", len(resp.BatchItemFailures))
	// Output:
	// fulfilling o-7
	// failures: 0
}
