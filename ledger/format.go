package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
	"github.com/hookledger/hookledger/version"
)

// Format is the record format this code writes. Every write to a record
// stores it, with the release that wrote it (Record.Format, Record.Release).
//
//   - 1: records without the attribute, written before 0.1.0. Their
//     missing run counters are read as format 2 counts them (decodeRecord).
//   - 2: 0.1.0. Records carry format and release; the run counters
//     failures, interrupted and given_back are kept from the first claim.
//
// A table holding a newer format than this is refused (UseFormat).
const Format = 2

// The table's format item: one item beside the records, under a key no
// record, replay guard ("rg#"), order item ("ord#"), reclaimer lock
// ("reclaimer#run") or idempotency item ("idem#") can have.
const (
	formatPK = "ledger#meta"
	formatSK = "format"
)

// TableFormat is what the table's format item says: the newest record
// format written to it and the release that raised it there. Format 0:
// no item (a new table, or one only code before 0.1.0 wrote).
type TableFormat struct {
	Format  int
	Release string
}

// ErrNewerFormat: the table holds records of a format newer than this code
// knows. It would misread them, so it must not run.
var ErrNewerFormat = errors.New("ledger: the table holds a newer record format")

// FormatError is returned with ErrNewerFormat. Its message names the
// format, the release that wrote it and the fix.
type FormatError struct {
	Table string
	Found TableFormat
}

func (e *FormatError) Error() string {
	by := "a newer hookledger"
	if e.Found.Release != "" {
		by = "hookledger " + e.Found.Release
	}
	fix := "a newer release"
	if e.Found.Release != "" {
		fix = "v" + e.Found.Release + " or later"
	}
	return fmt.Sprintf("table %s holds record format %d, written by %s; this is hookledger %s, which knows format %d at most and would misread it. "+
		"Deploy hookledger %s (see CHANGELOG.md, \"Rolling back\")", e.Table, e.Found.Format, by, version.Version, Format, fix)
}

func (e *FormatError) Unwrap() error { return ErrNewerFormat }

// FormatWrite says how UseFormat may raise the table's format: with the
// call the caller's role is granted, or not at all.
type FormatWrite int

// The ways UseFormat may write.
const (
	ReadOnly      FormatWrite = iota // check only: a caller that writes no records (the reconciler, inspect)
	WriteByPut                       // PutItem: the receiver's and the bus door's grant
	WriteByUpdate                    // UpdateItem: the processor's and the reclaimer's
)

// UseFormat is a cold start's check of the table's format: one GetItem.
// A format newer than Format is a *FormatError (ErrNewerFormat). An older
// or absent one is raised to Format with one conditional write, unless w
// is ReadOnly; it is never lowered. It returns the format the table holds.
func (l *Ledger) UseFormat(ctx context.Context, w FormatWrite) (TableFormat, error) {
	f, err := l.readFormat(ctx)
	switch {
	case err != nil:
		return f, err
	case f.Format > Format:
		return f, &FormatError{Table: l.opt.Table, Found: f}
	case f.Format == Format || w == ReadOnly:
		return f, nil
	}
	mine := TableFormat{Format: Format, Release: version.Version}
	cond := aws.String("attribute_not_exists(#format) OR #format < :format")
	names := map[string]string{"#format": attrFormat}
	vals := map[string]types.AttributeValue{":format": dynamo.N(Format), ":release": dynamo.S(version.Version), ":now": dynamo.Millis(l.now())}
	key := map[string]types.AttributeValue{attrPK: dynamo.S(formatPK), attrSK: dynamo.S(formatSK)}
	if w == WriteByPut {
		item := map[string]types.AttributeValue{attrFormat: vals[":format"], attrRelease: vals[":release"], attrUpdated: vals[":now"]}
		for k, v := range key {
			item[k] = v
		}
		_, err = l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &l.opt.Table, Item: item, ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: map[string]types.AttributeValue{":format": vals[":format"]}})
	} else {
		_, err = l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &l.opt.Table, Key: key, ConditionExpression: cond,
			UpdateExpression:         aws.String("SET #format = :format, #release = :release, " + attrUpdated + " = :now"),
			ExpressionAttributeNames: map[string]string{"#format": attrFormat, "#release": attrRelease}, ExpressionAttributeValues: vals})
	}
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return mine, nil
	case !errors.As(err, &ccf):
		return f, fmt.Errorf("raise table %s to record format %d: %w: %v", l.opt.Table, Format, ErrUnavailable, err)
	}
	// Raised meanwhile by another cold start: this release's, or a newer.
	if f, err = l.readFormat(ctx); err == nil && f.Format > Format {
		err = &FormatError{Table: l.opt.Table, Found: f}
	}
	return f, err
}

// readFormat reads the table's format item consistently.
func (l *Ledger) readFormat(ctx context.Context) (TableFormat, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &l.opt.Table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrPK: dynamo.S(formatPK), attrSK: dynamo.S(formatSK)},
	})
	if err != nil {
		return TableFormat{}, fmt.Errorf("read the record format of table %s: %w: %v", l.opt.Table, ErrUnavailable, err)
	}
	return TableFormat{Format: int(dynamo.GetN(out.Item, attrFormat)), Release: dynamo.GetS(out.Item, attrRelease)}, nil
}

// fromFormat1 reads the run counters a format-1 record lacks as format 2
// counts them. has reports whether the item holds an attribute.
//
//   - interrupted, absent: the code that wrote it counted no interruption,
//     so none is known but the run a processing record shows in progress,
//     which format 2 counts from its claim.
//   - failures, absent: that code spent MaxAttempts on every run, so every
//     run counts as failed but the one that succeeded (done) and those
//     counted interrupted. A failed or dead record gets attempts, a
//     processing one attempts-1, and the budget left is the one it had.
//   - given_back, absent, stays 0: no run is known to have been given back
//     before the handler ran, so EarlierRun names every interrupted run as
//     one that may have reached it (at worst "stale after a run", never
//     the reverse).
func (r *Record) fromFormat1(has func(string) bool) {
	if !has(attrInterrupts) && r.Status == Processing {
		r.Interrupted = 1
	}
	if !has(attrFailures) {
		ok := 0
		if r.Status == Done {
			ok = 1
		}
		r.Failures = max(0, r.Attempts-r.Interrupted-ok)
	}
}

// counterSets are the SET clauses that store rec's run counters as
// decoded, and their values: the first write to a format-1 record keeps
// what fromFormat1 derived, which the attributes would otherwise lose.
func counterSets(rec Record) ([]string, map[string]types.AttributeValue) {
	return []string{attrFailures + " = :failures", attrInterrupts + " = :interrupted", attrGivenBack + " = :given_back"},
		map[string]types.AttributeValue{
			":failures": dynamo.N(int64(rec.Failures)), ":interrupted": dynamo.N(int64(rec.Interrupted)), ":given_back": dynamo.N(int64(rec.GivenBack)),
		}
}
