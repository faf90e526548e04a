package ledger

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// PutPayloadIfAbsent stores body as id's payload unless a payload is stored
// already, with one conditional put, and reports whether it stored it: a
// payload that is there is never written over. (EnsurePayload does the same
// for a role that may update items but not put them.)
func (l *Ledger) PutPayloadIfAbsent(ctx context.Context, id ID, body []byte) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	stored, enc := storedBody(body)
	item := key(id, skPayload)
	item[attrBody] = &types.AttributeValueMemberB{Value: stored}
	item[attrExpires] = n(l.now().Add(l.retention(id.Source)).Unix())
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

// EnsurePayload stores body as id's payload unless one is stored already,
// and reports whether it stored it. It is PutPayloadIfAbsent made with one
// conditional UpdateItem (which creates the item when it is missing), so
// the processor, whose role may update items but not put them, can keep
// the body of an event in trouble: one redelivered, failed or buried while
// its payload was never stored (HOOKLEDGER_PAYLOAD=on-trouble, or a
// receiver whose payload write failed while its enqueue succeeded). It is
// billed like a put of the payload, and a payload already there costs one
// failed conditional write of its size; a ledger not given the source's
// retention (the processor's) first reads the record's expires_at (half a
// read unit), so that the payload expires with its record.
func (l *Ledger) EnsurePayload(ctx context.Context, id ID, body []byte) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	stored, enc := storedBody(body)
	set := "SET #b = :b, expires_at = :e"
	vals := map[string]types.AttributeValue{
		":b": &types.AttributeValueMemberB{Value: stored},
		":e": n(l.payloadExpiry(ctx, id)), // with its record, whatever the source's retention
	}
	if enc != "" {
		set += ", enc = :enc"
		vals[":enc"] = s(enc)
	}
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &l.opt.Table, Key: key(id, skPayload),
		UpdateExpression:          aws.String(set),
		ConditionExpression:       aws.String("attribute_not_exists(#b)"),
		ExpressionAttributeNames:  map[string]string{"#b": attrBody},
		ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ccf):
		return false, nil
	}
	return false, unavailable("ensure payload", id, err)
}
