// Package dynamo holds the DynamoDB mechanics that package ledger and the
// idempotency module share: the attribute codec, write tokens, the rule
// that settles a conditional write (Settle), bounded gzip, and table
// creation for tests and local runs. Each store keeps its own stored
// format. The package imports only the standard library and the AWS SDK.
package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemAPI is the slice of the DynamoDB client that writes and reads one
// item: all an idempotency store calls, and the core of the ledger's calls.
type ItemAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ ItemAPI = (*dynamodb.Client)(nil)

// S is a string attribute.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// N is a number attribute.
func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// Millis is t as a number attribute of Unix milliseconds, the way both
// stores keep times (expiry, which TTL reads, is N of Unix seconds).
func Millis(t time.Time) types.AttributeValue { return N(t.UnixMilli()) }

// GetS returns item's string attribute name, "" when it has none.
func GetS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// GetN returns item's number attribute name as an integer, 0 when it has none.
func GetN(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	return 0
}

// GetMillis reverses Millis: UTC, or the zero time for a missing (or 0) attribute.
func GetMillis(item map[string]types.AttributeValue, name string) time.Time {
	v := GetN(item, name)
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// NewToken returns 32 random hex digits, by which Settle recognises the caller's write.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
