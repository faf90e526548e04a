// Command sqs is an example SQS consumer made idempotent with package
// idempotency: it ships each order once, however often its message is
// delivered (SQS redelivers after a timeout or a partial failure, and a
// producer may send the same order twice). Failed messages are reported
// as partial batch failures, so only they come back.
//
// Environment: IDEMPOTENCY_TABLE, ORDERS_TABLE.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/idempotency"
)

type shipper struct {
	db    *dynamodb.Client
	table string
}

// ship is the side effect that must happen once per order: it counts the
// shipments on the order item, so a duplicate would show.
func (s shipper) ship(ctx context.Context, m events.SQSMessage) error {
	var msg struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal([]byte(m.Body), &msg); err != nil || msg.OrderID == "" {
		return fmt.Errorf("message %s: want {\"order_id\": ...}", m.MessageId)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       map[string]types.AttributeValue{"order_id": &types.AttributeValueMemberS{Value: msg.OrderID}},
		UpdateExpression:          aws.String("SET #s = :shipped ADD shipments :one"),
		ConditionExpression:       aws.String("attribute_exists(order_id)"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":shipped": &types.AttributeValueMemberS{Value: "shipped"}, ":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	return err
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	fail := func(msg string, err error) {
		log.Error(msg, "error", err.Error())
		os.Exit(1)
	}
	for _, k := range []string{"IDEMPOTENCY_TABLE", "ORDERS_TABLE"} {
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
		Table:        os.Getenv("IDEMPOTENCY_TABLE"),
		Metrics:      os.Stdout,
		Logger:       log,
		CacheEntries: 1024, // redeliveries to this instance cost no request
		Disabled:     idempotency.EnvDisabled(os.Getenv),
	})
	if err != nil {
		fail("idempotency store", err)
	}
	s := shipper{db: db, table: os.Getenv("ORDERS_TABLE")}
	h, err := idempotency.SQS(store, "ship-order", s.ship, idempotency.SQSConfig{
		// The order id, not the message id: a producer's duplicate send is
		// caught as well as SQS's redelivery of one message.
		Config: idempotency.Config[events.SQSMessage, struct{}]{KeyPath: "body.order_id"},
	})
	if err != nil {
		fail("idempotency configuration", err)
	}
	lambda.Start(h.Handle)
}
