package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableInput is the smallest table a Store needs, for functions that use
// idempotency without the hookledger pipeline: on demand, string keys pk
// and sk, server-side encryption. Enable TTL on expires_at as well
// (CreateTable does). The hookledger ledger table works too: call records
// use their own key prefix and sort key and stay off its due index.
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		SSESpecification: &types.SSESpecification{Enabled: aws.Bool(true)},
	}
}

// TableAPI is what CreateTable needs.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTable creates TableInput's table unless it exists, waits until it
// is active and enables TTL on expires_at. For tests and local runs; in
// AWS your template owns the table.
func CreateTable(ctx context.Context, db TableAPI, name string) error {
	_, err := db.CreateTable(ctx, TableInput(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	for i := 0; ; i++ {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", name, err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			break
		}
		if i > 300 {
			return fmt.Errorf("table %s not active after 60s (status %s)", name, out.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires_at"), Enabled: aws.Bool(true)},
	})
	var ve interface{ ErrorMessage() string }
	if err != nil && !(errors.As(err, &ve) && strings.Contains(ve.ErrorMessage(), "already enabled")) {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}
