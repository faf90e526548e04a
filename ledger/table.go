package ledger

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// DueIndex is the name of the sparse global secondary index the reclaimer
// queries.
const DueIndex = "due"

// TableInput is the table's schema, the same as template.yaml declares: on
// demand, string keys pk/sk, the sparse KEYS_ONLY indexes due (due_shard
// N / due_at N) and dead (dead_shard N / dead_at N), server-side
// encryption. TTL on expires_at is
// enabled separately (CreateTable does both).
func TableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrDueShard), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String(attrDueAt), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String(attrDeadShard), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String(attrDeadAt), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(DueIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrDueShard), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrDueAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}, {
			IndexName: aws.String(DeadIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrDeadShard), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrDeadAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		SSESpecification: &types.SSESpecification{Enabled: aws.Bool(true)},
	}
}

// CreateTable creates the ledger table if it does not exist, waits until it
// is active and enables TTL on expires_at. For tests and local runs; in AWS
// the SAM template owns the table.
func CreateTable(ctx context.Context, db dynamo.TableAPI, name string) error {
	return dynamo.CreateTable(ctx, db, TableInput(name), attrExpires)
}
