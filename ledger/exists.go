package ledger

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Exists reports whether the ledger holds a record for id, with one
// eventually consistent GetItem of the key (half a read unit). It serves
// hookledger reconcile: a stale "no" only feeds the event to the receiver,
// which answers duplicate; a stale "yes" cannot happen.
//
// Unlike Get, an expired record counts as found: feeding its event again
// would let Create replace it and run its effects twice. Callers keep
// their window inside the retention, so TTL cannot have removed it either.
func (l *Ledger) Exists(ctx context.Context, id Key) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &l.opt.Table, Key: key(id, skRecord),
		ProjectionExpression: aws.String("#k"), ExpressionAttributeNames: map[string]string{"#k": attrPK},
	})
	if err != nil {
		return false, unavailable("exists", id, err)
	}
	return out.Item != nil, nil
}
