// Command api is an example HTTP API handler made idempotent with package
// idempotency: POST /orders creates an order (a DynamoDB item) and queues
// it for fulfilment (an SQS message). A client that retries with the same
// Idempotency-Key header gets the first answer back, marked
// "Idempotent-Replayed: true", and no second order; the same key with a
// different order is refused (422); a retry while the first is still
// running gets 409 and Retry-After.
//
// Environment: IDEMPOTENCY_TABLE, ORDERS_TABLE, ORDERS_QUEUE_URL;
// HOOKLEDGER_IDEMPOTENCY_DISABLED=true runs without idempotency (tests only).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/idempotency"
)

type request = events.APIGatewayV2HTTPRequest
type response = events.APIGatewayV2HTTPResponse

// orders creates orders; its dependencies are fields, read once at cold start.
type orders struct {
	db       *dynamodb.Client
	table    string
	sqs      *sqs.Client
	queueURL string
}

type newOrder struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// create is the function made idempotent: everything in it happens once
// per Idempotency-Key. A bad request is an answer too, stored and replayed.
func (o orders) create(ctx context.Context, req request) (response, error) {
	var in newOrder
	if err := json.Unmarshal([]byte(req.Body), &in); err != nil || in.SKU == "" || in.Qty < 1 {
		return reply(400, map[string]string{"error": `want {"sku": "...", "qty": 1 or more}`}), nil
	}
	var b [8]byte
	rand.Read(b[:])
	id := "ord_" + hex.EncodeToString(b[:])
	call, _ := idempotency.CallFrom(ctx)
	_, err := o.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &o.table,
		Item: map[string]types.AttributeValue{
			"order_id":        &types.AttributeValueMemberS{Value: id},
			"sku":             &types.AttributeValueMemberS{Value: in.SKU},
			"qty":             &types.AttributeValueMemberN{Value: strconv.Itoa(in.Qty)},
			"status":          &types.AttributeValueMemberS{Value: "created"},
			"idempotency_key": &types.AttributeValueMemberS{Value: call.Key},
		},
	})
	if err != nil {
		return response{}, err // not stored: the client's retry runs again
	}
	msg, _ := json.Marshal(map[string]string{"order_id": id})
	if _, err := o.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &o.queueURL, MessageBody: aws.String(string(msg))}); err != nil {
		return response{}, err
	}
	return reply(201, map[string]string{"order_id": id, "status": "created"}), nil
}

func reply(status int, body any) response {
	b, _ := json.Marshal(body)
	return response{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(b)}
}

// answer maps what idempotency refused to HTTP (the draft standard for the
// Idempotency-Key header: 400 without a key, 422 when the key is reused
// with another request, 409 while the first is in progress).
func answer(resp response, err error, log *slog.Logger) (response, error) {
	switch {
	case err == nil:
		return resp, nil
	case errors.Is(err, idempotency.ErrNoKey), errors.Is(err, idempotency.ErrBadInput):
		return reply(400, map[string]string{"error": "send an Idempotency-Key header and a JSON body"}), nil
	case errors.Is(err, idempotency.ErrPayloadMismatch):
		return reply(422, map[string]string{"error": "this Idempotency-Key was used with a different order"}), nil
	case errors.Is(err, idempotency.ErrInProgress):
		r := reply(409, map[string]string{"error": "a request with this Idempotency-Key is in progress; retry"})
		r.Headers["Retry-After"] = "1"
		return r, nil
	}
	log.Error("create order", "error", err.Error())
	return reply(500, map[string]string{"error": "internal error"}), nil
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	fail := func(msg string, err error) {
		log.Error(msg, "error", err.Error())
		os.Exit(1)
	}
	for _, k := range []string{"IDEMPOTENCY_TABLE", "ORDERS_TABLE", "ORDERS_QUEUE_URL"} {
		if os.Getenv(k) == "" {
			fail("configuration", errors.New(k+" is not set"))
		}
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fail("AWS configuration", err)
	}
	db := dynamodb.NewFromConfig(cfg)
	store, err := idempotency.NewStore(db, idempotency.Options{
		Table:    os.Getenv("IDEMPOTENCY_TABLE"),
		Metrics:  os.Stdout, // EMF: IdempotencyHit, IdempotencyMiss, ... by Operation
		Logger:   log,
		Disabled: idempotency.EnvDisabled(os.Getenv),
	})
	if err != nil {
		fail("idempotency store", err)
	}
	o := orders{db: db, table: os.Getenv("ORDERS_TABLE"), sqs: sqs.NewFromConfig(cfg), queueURL: os.Getenv("ORDERS_QUEUE_URL")}
	create, err := idempotency.Wrap(store, "create-order", o.create, idempotency.Config[request, response]{
		KeyPath:      "headers.idempotency-key", // API Gateway lower-cases header names
		ValidatePath: "body.sku, body.qty",      // the same key with another order is refused
		OnReplay:     idempotency.ReplayHeaderV2,
	})
	if err != nil {
		fail("idempotency configuration", err)
	}
	lambda.Start(func(ctx context.Context, req request) (response, error) {
		resp, err := create.Handle(ctx, req)
		return answer(resp, err, log)
	})
}
