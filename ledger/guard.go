package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookledger/hookledger/dynamo"
)

// skGuard is the sort key of a replay-guard item.
const skGuard = "g"

// guardPK is the replay-guard item's partition key for one body of one
// type of one source and tenant: "rg#", then the parts escaped, so no two
// (type, digest) pairs share an item.
func guardPK(id Key, ev Identity) string {
	return "rg#" + escape(id.Source) + "#" + escape(id.Tenant) + "#" + escape(ev.Type) + "#" + escape(ev.BodySHA256)
}

// ClaimBody is the replay guard. With one conditional put it records, for
// the retention window, that id's source and tenant delivered a body of
// type ev.Type and digest ev.BodySHA256 under id.ID. It returns the id the
// body was first seen with: id.ID for the first delivery and its retries,
// another when the body is replayed under a new event id. It serves
// providers whose signature covers neither the event id nor a timestamp.
//
// It is scoped by event type: two real events of different types may carry
// identical bodies (Shopify's orders/create and an orders/updated right
// after it). The price: a captured body sent again under a new id and
// another type passes. Never trust such a delivery's type for anything a
// forged one could abuse.
//
// id is as NewKey returned it; ClaimBody does not check it again.
func (l *Ledger) ClaimBody(ctx context.Context, id Key, ev Identity) (string, error) {
	if ev.BodySHA256 == "" || len(ev.BodySHA256) > 128 {
		return "", fmt.Errorf("%w: body digest must be 1..128 bytes", ErrInvalid)
	}
	if n := len(guardPK(id, ev)); n > MaxPKBytes {
		return "", fmt.Errorf("%w: replay-guard key is %d bytes, over DynamoDB's %d-byte partition key limit", ErrInvalid, n, MaxPKBytes)
	}
	now := l.now()
	_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &l.opt.Table,
		Item: map[string]types.AttributeValue{
			attrPK: dynamo.S(guardPK(id, ev)), attrSK: dynamo.S(skGuard), attrKey: dynamo.S(id.ID),
			attrCreated: dynamo.Millis(now), attrExpires: dynamo.N(now.Add(l.retention(id.Source)).Truncate(time.Second).Unix()),
		},
		// A retry of the same event (same key) may refresh the item; so may
		// anyone once it has expired (TTL deletion can lag by days).
		ConditionExpression:                 aws.String("attribute_not_exists(pk) OR expires_at <= :now OR event_key = :key"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": dynamo.N(now.Unix()), ":key": dynamo.S(id.ID)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return id.ID, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return "", unavailable("claim body", id, err)
	}
	if first := dynamo.GetS(ccf.Item, attrKey); first != "" {
		return first, nil
	}
	// The endpoint omitted the old item: read it.
	out, gerr := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &l.opt.Table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrPK: dynamo.S(guardPK(id, ev)), attrSK: dynamo.S(skGuard)},
	})
	if gerr != nil {
		return "", unavailable("claim body", id, gerr)
	}
	if first := dynamo.GetS(out.Item, attrKey); first != "" {
		return first, nil
	}
	return "", fmt.Errorf("claim body %s: %w", id, ErrConflict)
}
