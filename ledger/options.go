package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/dynamo"
)

// API is the slice of the DynamoDB client the ledger calls.
type API interface {
	dynamo.ItemAPI
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Defaults for Options' zero values.
const (
	DefaultShards       = 16
	DefaultRetention    = 7 * 24 * time.Hour
	DefaultReclaimAfter = 2 * time.Minute
)

// Options configure a Ledger.
type Options struct {
	// Table is the DynamoDB table name. Required.
	Table string
	// Shards is the number of due-index partitions (default 16). Changing
	// it on a live table moves only new records; the reclaimer must query
	// the largest value ever used.
	Shards int
	// Retention is how long records and payloads live (default 7 days).
	// Keep it above the longest provider retry window: Stripe retries for 3 days.
	Retention time.Duration
	// SourceRetention overrides Retention per source. The record, its
	// payload and the replay guard's digest expire together.
	SourceRetention map[string]time.Duration
	// ReclaimAfter is how long a new record waits in received before the
	// reclaimer looks (default 2 minutes). Claims leave due_at alone, so
	// claim and complete never rewrite the due index.
	ReclaimAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// New returns a ledger over db.
func New(db API, opt Options) (*Ledger, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil DynamoDB client", ErrInvalid)
	}
	if opt.Table == "" {
		return nil, fmt.Errorf("%w: table name is empty", ErrInvalid)
	}
	if opt.Shards == 0 {
		opt.Shards = DefaultShards
	}
	if opt.Shards < 1 || opt.Shards > 1000 {
		return nil, fmt.Errorf("%w: shards %d out of range 1..1000", ErrInvalid, opt.Shards)
	}
	if opt.Retention == 0 {
		opt.Retention = DefaultRetention
	}
	if opt.ReclaimAfter == 0 {
		opt.ReclaimAfter = DefaultReclaimAfter
	}
	if opt.Retention < 0 || opt.ReclaimAfter < 0 {
		return nil, fmt.Errorf("%w: negative retention or reclaim delay", ErrInvalid)
	}
	if err := checkRetentions(opt.SourceRetention); err != nil {
		return nil, err
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Ledger{db: db, opt: opt}, nil
}

// Shards is the number of due-index shards this ledger writes.
func (l *Ledger) Shards() int { return l.opt.Shards }

// Table is the table name.
func (l *Ledger) Table() string { return l.opt.Table }

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
