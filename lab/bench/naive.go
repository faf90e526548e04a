package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/ledger"
)

// NaiveAPI is the slice of DynamoDB the naive ledger calls.
type NaiveAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Naive is the design hookledger's ledger is measured against: one item per
// event that holds the record and the payload together, so that every status
// change rewrites (and is billed on) the payload. It stores the payload
// exactly as the ledger does (gzip when smaller), so the comparison isolates
// the layout. It implements only what the comparison drives: create, claim,
// complete, in the same table and key space shape as the ledger (pk
// "naive#…", sk "r", the same due index attributes).
type Naive struct {
	DB     NaiveAPI
	Table  string
	Shards int
}

// ErrNaiveRefused is a refused conditional write (duplicate, lost lease).
var ErrNaiveRefused = errors.New("naive: condition failed")

func (l *Naive) key(id ledger.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "naive#" + id.PK()},
		"sk": &types.AttributeValueMemberS{Value: "r"},
	}
}

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// Create stores the record with the payload in one conditional put; created
// is false for a duplicate (one request, the old item comes back).
func (l *Naive) Create(ctx context.Context, id ledger.Key, typ, sha string, body []byte) (created bool, err error) {
	now := time.Now()
	creator := token()
	item := l.key(id)
	for k, v := range map[string]types.AttributeValue{
		"source": str(id.Source), "tenant": str(id.Tenant), "event_key": str(id.ID), "event_type": str(typ),
		"status": str("received"), "attempts": num(0), "reclaims": num(0),
		"created_at": num(now.UnixMilli()), "updated_at": num(now.UnixMilli()),
		"expires_at": num(now.Add(ledger.DefaultRetention).Unix()), "body_sha256": str(sha),
		"due_shard": num(int64(len(id.ID) % max(1, l.Shards))), "due_at": num(now.Add(ledger.DefaultReclaimAfter).UnixMilli()),
		"ver": num(1), "created_by": str(creator),
	} {
		item[k] = v
	}
	stored, enc := compress(body)
	item["body"] = &types.AttributeValueMemberB{Value: stored}
	if enc != "" {
		item["enc"] = str(enc)
	}
	_, err = l.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &l.Table, Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := failedItem(err); ok {
		// A retried put whose first attempt succeeded comes back refused: the
		// token says it was ours (the ledger guards the same way).
		return attr(old, "created_by") == creator, nil
	}
	if err != nil {
		return false, fmt.Errorf("naive create %s: %w", id, err)
	}
	return true, nil
}

// Claim leases the event; it returns the lease token.
func (l *Naive) Claim(ctx context.Context, id ledger.Key, lease time.Duration) (string, error) {
	now := time.Now()
	tok := token()
	_, err := l.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &l.Table, Key: l.key(id),
		UpdateExpression:         aws.String("SET #st = :processing, lease_owner = :tok, lease_until = :until, attempts = attempts + :one, updated_at = :now, ver = ver + :one"),
		ConditionExpression:      aws.String("#st IN (:received, :failed) OR (#st = :processing AND lease_until <= :now)"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":processing": str("processing"), ":received": str("received"), ":failed": str("failed"),
			":tok": str(tok), ":until": num(now.Add(lease).UnixMilli()), ":now": num(now.UnixMilli()), ":one": num(1),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := failedItem(err); ok && attr(old, "status") == "processing" && attr(old, "lease_owner") == tok {
		return tok, nil // the SDK retried a claim whose answer was lost: the lease is ours
	}
	return tok, refused(err)
}

// Complete marks the event done while tok holds the lease.
func (l *Naive) Complete(ctx context.Context, id ledger.Key, tok string) error {
	now := time.Now()
	_, err := l.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &l.Table, Key: l.key(id),
		UpdateExpression:         aws.String("SET #st = :done, updated_at = :now, ver = ver + :one REMOVE lease_owner, lease_until, due_shard, due_at"),
		ConditionExpression:      aws.String("#st = :processing AND lease_owner = :tok AND lease_until > :now"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":done": str("done"), ":processing": str("processing"), ":tok": str(tok), ":now": num(now.UnixMilli()), ":one": num(1),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := failedItem(err); ok && attr(old, "status") == "done" {
		return nil // a retried complete whose first attempt succeeded
	}
	return refused(err)
}

func failedItem(err error) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) && ccf.Item != nil {
		return ccf.Item, true
	}
	return nil, false
}

func attr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func refused(err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ErrNaiveRefused
	}
	return err
}

// compress is the ledger's payload encoding: gzip (best speed) from 512
// bytes on, when that is smaller.
func compress(body []byte) ([]byte, string) {
	if len(body) < 512 {
		return body, ""
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(body)
	zw.Close()
	if buf.Len() < len(body) {
		return buf.Bytes(), "gzip"
	}
	return body, ""
}

// Compressed is the size the ledger stores body at.
func Compressed(body []byte) int {
	b, _ := compress(body)
	return len(b)
}

func token() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
