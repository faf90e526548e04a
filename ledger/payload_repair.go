package ledger

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// PutPayloadIfAbsent stores body as id's payload unless a payload is stored
// already, with one conditional put, and reports whether it stored it. The
// receiver calls it for a record still received whose payload may be
// missing (the receiver that created the record failed before storing it)
// when the delivery's body digest differs from the record's: the payload
// that is there stays, and one that is not there is never left missing.
func (l *Ledger) PutPayloadIfAbsent(ctx context.Context, id ID, body []byte) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	stored, enc := storedBody(body)
	item := key(id, skPayload)
	item[attrBody] = &types.AttributeValueMemberB{Value: stored}
	item[attrExpires] = n(l.now().Add(l.opt.Retention).Unix())
	if enc != "" {
		item[attrEncoding] = s(enc)
	}
	_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &l.opt.Table, Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ccf):
		return false, nil
	}
	return false, unavailable("put payload if absent", id, err)
}
