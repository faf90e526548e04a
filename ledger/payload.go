package ledger

import (
	"context"
	"fmt"

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
