package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// Payload reads the body stored under id, whichever event it was written
// for. ErrNotFound when none was stored. The pipeline reads a record's body
// with PayloadOf.
func (l *Ledger) Payload(ctx context.Context, id Key) ([]byte, error) {
	item, err := l.payloadItem(ctx, id)
	if err != nil {
		return nil, err
	}
	return decodePayload(id, item)
}

// PayloadOf reads rec's body. A payload item written for another event
// (ofRecord) is ErrNotFound, as a missing one is. A key can be used again
// once its record expired, and TTL deletes the earlier payload days later,
// if at all: read by key alone, that body would run as the newer event's.
func (l *Ledger) PayloadOf(ctx context.Context, rec Record) ([]byte, error) {
	item, err := l.payloadItem(ctx, rec.Key)
	if err != nil {
		return nil, err
	}
	if why := ofRecord(item, rec); why != "" {
		return nil, fmt.Errorf("payload %s: %w (%s)", rec.Key, ErrNotFound, why)
	}
	return decodePayload(rec.Key, item)
}

func (l *Ledger) payloadItem(ctx context.Context, id Key) (map[string]types.AttributeValue, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &l.opt.Table, Key: key(id, skPayload), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, unavailable("get payload", id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("payload %s: %w", id, ErrNotFound)
	}
	return out.Item, nil
}

// ofRecord says why a payload item is not rec's body, or "" when it is, as
// far as can be told. An item marked with another digest was an earlier
// event's under the key. So was one that expires before rec was created:
// rec's payload is written after rec and lasts at least as long. An
// unmarked item under a record without a digest (both older than digests)
// is the record's.
func ofRecord(item map[string]types.AttributeValue, rec Record) string {
	if d := dynamo.GetS(item, attrSHA); d != "" && rec.BodySHA256 != "" && d != rec.BodySHA256 {
		return "it was stored for another body under this key: an earlier event's, whose record has expired"
	}
	if e := dynamo.GetN(item, attrExpires); e != 0 && !rec.CreatedAt.IsZero() && e < rec.CreatedAt.Unix() {
		return "it expired before the record was created: an earlier event's under this key"
	}
	return ""
}

// decodePayload returns the body a payload item holds, decompressed.
func decodePayload(id Key, item map[string]types.AttributeValue) ([]byte, error) {
	b, _ := item[attrBody].(*types.AttributeValueMemberB)
	if b == nil {
		return nil, fmt.Errorf("payload %s: %w (no body attribute)", id, ErrNotFound)
	}
	if dynamo.GetS(item, attrEncoding) != "gzip" {
		return b.Value, nil
	}
	body, err := dynamo.Decompress(b.Value, maxPayloadBytes)
	if err != nil {
		return nil, fmt.Errorf("payload %s: corrupt gzip: %w", id, err)
	}
	return body, nil
}

const (
	// maxPayloadBytes bounds a decompressed payload: Lambda takes 6 MB,
	// and a stored payload is at most 400 KB compressed.
	maxPayloadBytes = 8 << 20
	// compressAbove is the payload size from which gzip is tried.
	compressAbove = 512
)

// MaxItemBytes is DynamoDB's item size limit (400 KB, attribute names
// included).
const MaxItemBytes = 400 * 1024

// MaxPayloadRef bounds a record's PayloadRef (an S3 object key is at most
// 1,024 bytes).
const MaxPayloadRef = 1024

// ErrTooLarge means a payload cannot be stored in one ledger item, even
// compressed.
var ErrTooLarge = errors.New("ledger: payload too large to store")

// payloadOverhead is what a payload item holds besides the body: the
// attribute names and the sort key, expiry, encoding and body digest
// values, rounded up.
const payloadOverhead = 160

// storedBody is the body as the payload item stores it (gzip when that is
// smaller) and its encoding ("" or "gzip"). PutPayload encodes the same way.
func storedBody(body []byte) ([]byte, string) {
	if z, ok := dynamo.Shrink(body, compressAbove); ok {
		return z, "gzip"
	}
	return body, ""
}

// CheckPayloadSize reports ErrTooLarge when PutPayload could not store body
// for id: DynamoDB refuses items over MaxItemBytes. Call it before writing
// anything for the event, so that no record is created whose payload can
// never be stored. Bodies that fit uncompressed cost no compression here.
func CheckPayloadSize(id Key, body []byte) error {
	limit := MaxItemBytes - payloadOverhead - len(id.PK()) - len(strconv.Itoa(MaxItemBytes))
	if len(body) <= limit {
		return nil
	}
	stored, _ := storedBody(body)
	if len(stored) > limit {
		return fmt.Errorf("%w: %d bytes, %d compressed; a ledger item holds at most %d", ErrTooLarge, len(body), len(stored), limit)
	}
	return nil
}

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
	wrote, err := written(err)
	if err != nil {
		return false, unavailable("put payload if absent", id, err)
	}
	return wrote, nil
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
	wrote, err := written(err)
	if err != nil {
		return false, unavailable("ensure payload", id, err)
	}
	return wrote, nil
}
