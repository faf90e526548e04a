package ledger

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// PutPayloadIfAbsent stores body as id's payload, with digest as for
// PutPayload, unless a payload is there already: one conditional put that
// never writes over one. It reports whether it stored it.
func (l *Ledger) PutPayloadIfAbsent(ctx context.Context, id Key, body []byte, digest string) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	item := payloadItem(id, body, digest)
	item[attrExpires] = dynamo.N(l.now().Add(l.retention(id.Source)).Unix())
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

// EnsurePayload stores body as the payload of id's record unless the
// record's body is there already, and reports whether it stored it. ev is
// what the caller's message says the event is. It writes with one
// conditional UpdateItem, which creates a missing item: the processor's
// role may update items but not put them. So the processor keeps the body
// of an event in trouble whose payload was never stored
// (HOOKLEDGER_PAYLOAD=on-trouble, or a failed payload write beside a good
// enqueue), and the reclaimer keeps a body only a dead letter holds. An
// empty body is stored as an empty payload.
//
// It first reads the record (one consistent GetItem, one read unit):
//   - done, or gone (missing, or expired: a payload would outlive it):
//     nothing is stored, and it reports false;
//   - another event than ev (Record.Mismatch): nothing is stored, and the
//     error is a StateError with ErrNotThisEvent;
//   - otherwise (dead included: its replay needs the body) it stores body
//     unless an item marked with the record's digest, lasting as long as
//     the record, is there. An earlier event's item is written over.
//
// The read is consistent, so a record just written is never taken for
// gone. A record that turns done between read and write only gets a
// payload it will not need. The payload expires with its record. A failed
// read returns ErrUnavailable and writes nothing. The write is billed as a
// put of the payload; a payload already there costs one failed
// conditional write of its size.
func (l *Ledger) EnsurePayload(ctx context.Context, id Key, body []byte, ev Identity) (bool, error) {
	if err := id.Validate(); err != nil {
		return false, err
	}
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &l.opt.Table, Key: key(id, skRecord), ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#st, " + attrExpires + ", " + attrType + ", " + attrSHA + ", " + attrCreated),
		ExpressionAttributeNames: map[string]string{"#st": attrStatus}})
	if err != nil {
		return false, unavailable("ensure payload: read record", id, err)
	}
	rec := decodeRecord(out.Item)
	rec.Key = id
	expires := dynamo.GetN(out.Item, attrExpires)
	switch {
	case out.Item == nil, expires <= l.now().Unix():
		return false, nil // gone: nothing to keep a body for
	case rec.Status == Done:
		return false, nil // done: never re-driven nor replayed
	case rec.Mismatch(ev) != "":
		return false, &StateError{Op: "ensure payload", Err: ErrNotThisEvent, Record: rec}
	}
	if body == nil {
		body = []byte{}
	}
	stored, enc := storedBody(body)
	set := "SET #b = :b, expires_at = :e"
	vals := map[string]types.AttributeValue{
		":b": &types.AttributeValueMemberB{Value: stored},
		":e": dynamo.N(expires), // with its record, whatever the source's retention
	}
	if enc != "" {
		set += ", enc = :enc"
		vals[":enc"] = dynamo.S(enc)
	} else {
		set += " REMOVE enc" // over an earlier event's compressed item
	}
	// The record's body is there: an item marked with its digest that lasts
	// as long as it. Anything else is written over.
	cond := "attribute_not_exists(#b) OR expires_at < :e"
	if rec.BodySHA256 != "" {
		set = strings.Replace(set, "SET ", "SET "+attrSHA+" = :sha, ", 1)
		vals[":sha"] = dynamo.S(rec.BodySHA256)
		cond += " OR attribute_not_exists(" + attrSHA + ") OR " + attrSHA + " <> :sha"
	}
	_, err = l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &l.opt.Table, Key: key(id, skPayload),
		UpdateExpression:          aws.String(set),
		ConditionExpression:       aws.String(cond),
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
