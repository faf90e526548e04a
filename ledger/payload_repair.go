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
// receiver whose payload write failed beside a successful enqueue). An
// empty body is stored as an empty payload.
//
// It writes only for a record that can still need its body: it first reads
// the record (one consistent GetItem of its status and expires_at, one read
// unit) and stores nothing, reporting false, when the record is done (it is
// never re-driven nor replayed) or gone (missing, or past its retention: a
// payload written then would outlive its record). A dead record gets its
// body: the replay that follows needs it. The processor calls it before claiming a
// redelivered message, when the record may well be done already. The read
// is consistent so that a record just written is never taken for a gone
// one; a record that turns done between the read and the write only gets
// a payload it will not need, which expires with it. The payload expires
// with its record (its expires_at), whatever retention this ledger was
// given. A failed read is returned as ErrUnavailable, and nothing is
// written. The write is billed like a put of the payload, and a payload
// already there costs one failed conditional write of its size.
func (l *Ledger) EnsurePayload(ctx context.Context, id ID, body []byte) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &l.opt.Table, Key: key(id, skRecord), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#st, " + attrExpires), ExpressionAttributeNames: map[string]string{"#st": attrStatus}})
	if err != nil {
		return false, unavailable("ensure payload: read record", id, err)
	}
	expires := getN(out.Item, attrExpires)
	switch {
	case out.Item == nil, expires <= l.now().Unix():
		return false, nil // gone: nothing to keep a body for
	case Status(getS(out.Item, attrStatus)) == Done:
		return false, nil // done: never re-driven nor replayed
	}
	if body == nil {
		body = []byte{}
	}
	stored, enc := storedBody(body)
	set := "SET #b = :b, expires_at = :e"
	vals := map[string]types.AttributeValue{
		":b": &types.AttributeValueMemberB{Value: stored},
		":e": n(expires), // with its record, whatever the source's retention
	}
	if enc != "" {
		set += ", enc = :enc"
		vals[":enc"] = s(enc)
	}
	_, err = l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
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
