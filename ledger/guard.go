package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookledger/hookledger/internal/name"
)

// skGuard is the sort key of a replay-guard item.
const skGuard = "g"

// guardPK is the partition key of the replay-guard item for one body of one
// source and tenant. The "rg#" prefix keeps it apart from event records
// ("ev#"); it has no due-index attributes, so the reclaimer never sees it,
// and List reads only records.
func guardPK(id ID, digest string) string {
	return "rg#" + name.Escape(id.Source) + "#" + name.Escape(id.Tenant) + "#" + name.Escape(digest)
}

// ClaimBody is the replay guard: it records that id's source and tenant
// delivered a body with digest under id.Key, for the retention window, with
// one conditional put. It returns the key the body was first seen with:
// id.Key for the first delivery and for its retries (a retry carries the
// same key), another key when the body is being replayed under a new event
// id. The guard is meant for providers whose signature covers neither the
// event id nor a timestamp, where a captured delivery could otherwise be
// sent again as a new event.
func (l *Ledger) ClaimBody(ctx context.Context, id ID, digest string) (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	if digest == "" || len(digest) > 128 {
		return "", fmt.Errorf("%w: body digest must be 1..128 bytes", ErrInvalid)
	}
	now := l.now()
	_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &l.opt.Table,
		Item: map[string]types.AttributeValue{
			attrPK: s(guardPK(id, digest)), attrSK: s(skGuard), attrKey: s(id.Key),
			attrCreated: ms(now), attrExpires: n(now.Add(l.retention(id.Source)).Truncate(time.Second).Unix()),
		},
		// A retry of the same event (same key) may refresh the item; so may
		// anyone once it has expired (TTL deletion can lag by days).
		ConditionExpression:                 aws.String("attribute_not_exists(pk) OR expires_at <= :now OR event_key = :key"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": n(now.Unix()), ":key": s(id.Key)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return id.Key, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return "", unavailable("claim body", id, err)
	}
	if first := getS(ccf.Item, attrKey); first != "" {
		return first, nil
	}
	// The endpoint omitted the old item: read it.
	out, gerr := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &l.opt.Table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrPK: s(guardPK(id, digest)), attrSK: s(skGuard)},
	})
	if gerr != nil {
		return "", unavailable("claim body", id, gerr)
	}
	if first := getS(out.Item, attrKey); first != "" {
		return first, nil
	}
	return "", fmt.Errorf("claim body %s: %w", id, ErrConflict)
}
