package latency_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/lab/latency"
)

// Every request waits within its service's range: ten sequential
// DescribeTable calls take at least ten times the range's minimum.
func TestInjectedLatencyIsAddedPerRequest(t *testing.T) {
	t.Parallel()
	inj := &latency.Injector{ByService: map[string]latency.Range{"dynamodb": {Min: 20 * time.Millisecond, Max: 25 * time.Millisecond}}}
	cfg := awstest.Config(t, inj.APIOption)
	table := awstest.Table(t, cfg)
	db := dynamodb.NewFromConfig(cfg)
	start := time.Now()
	for range 10 {
		if _, err := db.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("10 requests took %v, want at least 200ms of injected latency", d)
	}
	// A cancelled context ends the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
	defer cancel()
	if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err == nil {
		t.Error("a request whose context ended during the injected wait succeeded")
	}
	if len(latency.Sources()) != 3 {
		t.Error("every published range needs its source")
	}
}
