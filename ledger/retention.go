package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// MinRetention is the shortest retention the pipeline accepts, globally and
// per source: a record must outlive its own processing (the processor's
// retries, the reclaimer's re-drives and an outage of either), or an
// accepted event would expire before it is done and be lost.
const MinRetention = 24 * time.Hour

// retention is how long items of source live: Options.SourceRetention's
// entry for it, else Options.Retention. Every write that sets expires_at
// (the record, its payload, the replay guard's digest) goes through it, so a
// payload never expires before its record.
func (l *Ledger) retention(source string) time.Duration {
	if d, ok := l.opt.SourceRetention[source]; ok {
		return d
	}
	return l.opt.Retention
}

// checkRetentions refuses per-source retentions that are not positive.
func checkRetentions(m map[string]time.Duration) error {
	for src, d := range m {
		if d <= 0 {
			return fmt.Errorf("%w: retention %v of source %q must be positive", ErrInvalid, d, src)
		}
	}
	return nil
}

// payloadExpiry is when a payload of id written now should expire: with its
// record. A ledger that was given the source's retention knows it; one that
// was not (the processor's: it does not read the sources configuration) reads
// the record's expires_at, set once at Create, with one eventually
// consistent GetItem of that attribute alone. Without a record to read, the
// source's retention from now.
func (l *Ledger) payloadExpiry(ctx context.Context, id ID) int64 {
	if _, known := l.opt.SourceRetention[id.Source]; !known {
		out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &l.opt.Table, Key: key(id, skRecord),
			ProjectionExpression: aws.String(attrExpires)})
		if err == nil {
			if e := getN(out.Item, attrExpires); e > 0 {
				return e
			}
		}
	}
	return l.now().Add(l.retention(id.Source)).Unix()
}
