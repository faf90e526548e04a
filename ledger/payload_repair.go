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

// PutPayloadIfAbsent stores body as id's payload unless a payload is stored
// already, with one conditional put, and reports whether it stored it: a
// payload that is there is never written over. digest is the body digest
// of the record it is the payload of, as for PutPayload. (EnsurePayload
// does the same for a role that may update items but not put them, and
// checks the record.)
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
// record's body is stored already, and reports whether it stored it. ev is
// what the caller's message says the event is (its type and body digest):
// a body is kept only as the payload of the record it belongs to. It is
// made with one conditional UpdateItem (which creates the item when it is
// missing), so the processor, whose role may update items but not put
// them, can keep the body of an event in trouble: one redelivered, failed
// or buried while its payload was never stored (HOOKLEDGER_PAYLOAD=on-
// trouble, or a receiver whose payload write failed beside a successful
// enqueue), and the reclaimer can keep a body that only a dead-letter
// message holds. An empty body is stored as an empty payload.
//
// It first reads the record (one consistent GetItem of its status, expiry,
// type and digest, one read unit) and writes only for a record that can
// still need its body:
//   - done (never re-driven nor replayed) or gone (missing, or past its
//     retention: a payload written then would outlive its record): nothing
//     is stored, and it reports false;
//   - another event than ev (Record.Mismatch: a stale message of an earlier
//     event under a key used again, a message without a digest under a
//     record with one): nothing is stored, and the error is a StateError
//     with ErrNotThisEvent;
//   - otherwise (dead included: the replay that follows needs the body) it
//     stores body unless the record's body is there already: a payload item
//     marked with the record's digest that lasts as long as the record. An
//     item left by an earlier event under the key (another digest, or none,
//     or an earlier expiry; see PayloadOf) is written over.
//
// The processor calls it before claiming a redelivered message, when the
// record may well be done already. The read is consistent so that a record
// just written is never taken for a gone one; a record that turns done
// between the read and the write only gets a payload it will not need,
// which expires with it. The payload expires with its record (its
// expires_at), whatever retention this ledger was given. A failed read is
// returned as ErrUnavailable, and nothing is written. The write is billed
// like a put of the payload, and a payload already there costs one failed
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
