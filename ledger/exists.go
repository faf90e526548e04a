package ledger

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Exists reports whether the ledger holds a record for id, with the
// cheapest read that answers it: one eventually consistent GetItem that
// projects the key only (half a read unit for a record, which stays under
// 1 KB). It is meant for comparing a provider's list of sent events with
// the ledger (hookledger reconcile), where a stale "no" costs nothing: the
// event is fed through the receiver, whose conditional put finds the record
// and answers duplicate. A stale "yes" cannot happen, since records are
// never deleted before their expiry.
//
// A record past its expiry still counts as found, unlike Get: an event
// whose record merely expired was processed once, and feeding it again
// would let Create replace the record and run its effects twice. Callers
// must keep their window inside the retention (see Options.Retention), so
// that DynamoDB's TTL cannot have removed the record either.
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
