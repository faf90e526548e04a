package idempotency

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// TableInput is the smallest table a Store needs, for functions that use
// idempotency without the hookledger pipeline: on demand, string keys pk
// and sk, server-side encryption. Enable TTL on expires_at as well
// (CreateTable does). The hookledger ledger table works too: records use
// their own key prefix and sort key and stay off its due index.
//
// The definition is this package's own rather than borrowed from package
// ledger: the ledger's table adds a due index this package never uses,
// and the idempotency table must not change when the ledger's does. Only
// the mechanics of creating a table (wait until active, enable TTL) are
// shared, through package dynamo.
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		SSESpecification: &types.SSESpecification{Enabled: aws.Bool(true)},
	}
}

// CreateTable creates TableInput's table unless it exists, waits until it
// is active and enables TTL on expires_at. For tests and local runs; in
// AWS your template owns the table.
func CreateTable(ctx context.Context, db dynamo.TableAPI, name string) error {
	return dynamo.CreateTable(ctx, db, TableInput(name), attrExpires)
}
