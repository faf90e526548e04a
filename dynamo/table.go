package dynamo

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

// TableAPI is the slice of the DynamoDB client CreateTable calls.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// How long CreateTable waits for a new table to become active, and how often it looks.
const (
	activeWait = 60 * time.Second
	activePoll = 200 * time.Millisecond
)

// CreateTable creates the table in unless it exists, waits until it is
// active and enables TTL on ttl: for tests and local runs (in AWS, a template).
func CreateTable(ctx context.Context, db TableAPI, in *dynamodb.CreateTableInput, ttl string) error {
	name := aws.ToString(in.TableName)
	_, err := db.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	for deadline := time.Now().Add(activeWait); ; {
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", name, err)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("table %s not active after %v (status %s)", name, activeWait, out.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(activePoll):
		}
	}
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(ttl), Enabled: aws.Bool(true)},
	})
	if err != nil && !ttlAlreadyOn(err) {
		return fmt.Errorf("enable TTL on %s: %w", name, err)
	}
	return nil
}

// ttlAlreadyOn recognises DynamoDB's refusal to enable TTL twice, which
// comes as a ValidationException distinguished only by its message.
func ttlAlreadyOn(err error) bool {
	var ve interface{ ErrorMessage() string }
	return errors.As(err, &ve) && strings.Contains(ve.ErrorMessage(), "already enabled")
}
