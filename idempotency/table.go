package idempotency

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/dynamotable"
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
// shared, through an internal package that neither owns.
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
	return dynamotable.Create(ctx, db, TableInput(name), attrExpires)
}
