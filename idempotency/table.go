package idempotency

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/ledger"
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
type TableAPI = ledger.TableAPI

// CreateTable creates TableInput's table unless it exists, waits until it
// is active and enables TTL on expires_at. For tests and local runs; in
// AWS your template owns the table.
func CreateTable(ctx context.Context, db TableAPI, name string) error {
	return ledger.CreateTableFrom(ctx, db, TableInput(name))
}
