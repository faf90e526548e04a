package ledger

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// IndexDead puts into the dead index the dead records a release before
// 0.2.0 buried: it wrote no dead_shard, so Find cannot see them. It scans
// the table once and writes each such record once, conditionally, with
// its last update as the burial time. With dry it only counts. It returns
// how many it found and how many it indexed; a record replayed meanwhile
// is left alone.
func (l *Ledger) IndexDead(ctx context.Context, dry bool) (found, indexed int, err error) {
	filter := "sk = :r AND #st = :dead AND attribute_not_exists(" + attrDeadShard + ")"
	names := map[string]string{"#st": attrStatus}
	vals := map[string]types.AttributeValue{":r": dynamo.S(skRecord), ":dead": dynamo.S(string(Dead))}
	var start map[string]types.AttributeValue
	for {
		out, err := l.db.Scan(ctx, &dynamodb.ScanInput{
			TableName: &l.opt.Table, FilterExpression: &filter, ExpressionAttributeNames: names,
			ExpressionAttributeValues: vals, ExclusiveStartKey: start,
			ProjectionExpression: aws.String(attrPK + ", " + attrSK + ", " + attrUpdated),
		})
		if err != nil {
			return found, indexed, fmt.Errorf("scan table %s for unindexed dead records: %w: %v", l.opt.Table, ErrUnavailable, err)
		}
		for _, it := range out.Items {
			found++
			if dry {
				continue
			}
			ok, err := l.indexDead(ctx, it)
			if err != nil {
				return found, indexed, err
			}
			if ok {
				indexed++
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return found, indexed, nil
		}
		start = out.LastEvaluatedKey
	}
}

// indexDead writes one dead record's dead-index keys, if it is still dead
// and unindexed.
func (l *Ledger) indexDead(ctx context.Context, it map[string]types.AttributeValue) (bool, error) {
	pk := dynamo.GetS(it, attrPK)
	at := it[attrUpdated]
	if at == nil {
		at = dynamo.N(0)
	}
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &l.opt.Table, Key: map[string]types.AttributeValue{attrPK: dynamo.S(pk), attrSK: dynamo.S(skRecord)},
		UpdateExpression:          aws.String("SET " + attrDeadShard + " = :shard, " + attrDeadAt + " = :at"),
		ConditionExpression:       aws.String("#st = :dead AND attribute_not_exists(" + attrDeadShard + ")"),
		ExpressionAttributeNames:  map[string]string{"#st": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{":shard": dynamo.N(int64(shardOf(pk, l.opt.Shards))), ":at": at, ":dead": dynamo.S(string(Dead))},
	})
	wrote, err := written(err)
	if err != nil {
		return false, fmt.Errorf("index dead record %s: %w: %v", pk, ErrUnavailable, err)
	}
	return wrote, nil
}
