package dynamo_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
	"github.com/hookledger/hookledger/internal/awstest"
)

// TestCreateTwice: creating a table that exists, with TTL already on, is
// no error (tests and local runs create their tables on every start), and
// the table ends active with TTL on the attribute asked for.
func TestCreateTwice(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	name := awstest.Name("dt-test")
	in := func() *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		}
	}
	t.Cleanup(func() { db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name}) })
	for i := range 2 {
		if err := dynamo.CreateTable(t.Context(), db, in(), "expires_at"); err != nil {
			t.Fatalf("create #%d: %v", i+1, err)
		}
	}
	ttl, err := db.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: &name})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "expires_at" || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("TTL: %+v, want enabled on expires_at", d)
	}
}
