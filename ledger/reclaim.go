package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// Due returns up to limit identities in shard due at or before now, oldest
// first. The index lags, projects keys only and keeps done records: read
// each record (Get, GetMany) before acting on it.
func (l *Ledger) Due(ctx context.Context, shard int, now time.Time, limit int) ([]Key, error) {
	ids, _, err := l.DueFrom(ctx, shard, now, limit, DueCursor{})
	return ids, err
}

// DueCursor is where a walk through one shard's due records stands. The zero
// value starts at the oldest; DueFrom returns the one to pass next.
type DueCursor struct {
	after map[string]types.AttributeValue
	done  bool
}

// Done reports whether the walk reached the end of the shard's due records.
func (c DueCursor) Done() bool { return c.done }

// DueFrom is Due as a walk: the next page of up to limit due identities
// after from, and the cursor for the page after it (Done: none). Walking
// on never reads an entry twice, however far the index lags behind.
func (l *Ledger) DueFrom(ctx context.Context, shard int, now time.Time, limit int, from DueCursor) ([]Key, DueCursor, error) {
	entries, next, err := l.DueAfter(ctx, shard, time.Time{}, now, limit, from)
	ids := make([]Key, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	return ids, next, err
}

// DueEntry is one entry of the due index: a record's identity and the due
// time the index holds for it, which can lag behind the record's own.
type DueEntry struct {
	ID Key
	At time.Time
}

// DueAfter is DueFrom for entries due after after (zero: all) and at or
// before upTo, with their due times: the walk from a shard's mark to now.
func (l *Ledger) DueAfter(ctx context.Context, shard int, after, upTo time.Time, limit int, from DueCursor) ([]DueEntry, DueCursor, error) {
	if shard < 0 || shard >= l.opt.Shards {
		return nil, from, fmt.Errorf("%w: shard %d out of range 0..%d", ErrInvalid, shard, l.opt.Shards-1)
	}
	if limit <= 0 {
		return nil, from, fmt.Errorf("%w: limit %d must be positive", ErrInvalid, limit)
	}
	if from.done {
		return nil, from, nil
	}
	lo := int64(0)
	if !after.IsZero() {
		lo = after.UnixMilli() + 1
	}
	if hi := upTo.UnixMilli(); lo > hi {
		return nil, DueCursor{done: true}, nil
	}
	out, err := l.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              &l.opt.Table,
		IndexName:              aws.String(DueIndex),
		KeyConditionExpression: aws.String("due_shard = :shard AND due_at BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": dynamo.N(int64(shard)), ":lo": dynamo.N(lo), ":hi": dynamo.Millis(upTo),
		},
		Limit:             aws.Int32(int32(limit)),
		ExclusiveStartKey: from.after,
	})
	if err != nil {
		return nil, from, fmt.Errorf("due shard %d: %w: %v", shard, ErrUnavailable, err)
	}
	entries := make([]DueEntry, 0, len(out.Items))
	for _, it := range out.Items {
		if dynamo.GetS(it, attrSK) != skRecord {
			continue
		}
		id, err := ParsePK(dynamo.GetS(it, attrPK))
		if err != nil {
			continue // not one of ours; never act on it
		}
		entries = append(entries, DueEntry{ID: id, At: dynamo.GetMillis(it, attrDueAt)})
	}
	next := DueCursor{after: out.LastEvaluatedKey, done: len(out.LastEvaluatedKey) == 0}
	return entries, next, nil
}

// batchGetMax is the most keys one BatchGetItem takes.
const batchGetMax = 100

// GetMany reads the records of ids consistently, up to 100 per
// BatchGetItem. A missing or expired record is absent from the result. On
// error the result holds what was read; the ids it lacks are unknown.
func (l *Ledger) GetMany(ctx context.Context, ids []Key) (map[Key]Record, error) {
	return l.getMany(ctx, "get records", ids, true)
}

// Peek is GetMany with eventually consistent reads, at half the price: a
// record may show as it was a moment ago, or be missing if just created.
// What it shows terminal is terminal, or was replayed, which moved its due
// time too. So the reclaimer passes those on Peek's word, and reads every
// other record again with GetMany before acting.
func (l *Ledger) Peek(ctx context.Context, ids []Key) (map[Key]Record, error) {
	return l.getMany(ctx, "peek records", ids, false)
}

func (l *Ledger) getMany(ctx context.Context, op string, ids []Key, consistent bool) (map[Key]Record, error) {
	out := make(map[Key]Record, len(ids))
	now := l.now()
	err := l.batchGet(ctx, op, ids, skRecord, consistent, func(id Key, item map[string]types.AttributeValue) {
		if r := decodeRecord(item); !r.Expired(now) {
			out[id] = r
		}
	})
	return out, err
}

// Payloads reads the bodies of recs as PayloadOf does, up to 100 per
// BatchGetItem. Without error, a record absent from the result has no
// stored body; on error, the records it lacks are unknown.
func (l *Ledger) Payloads(ctx context.Context, recs []Record) (map[Key][]byte, error) {
	out := make(map[Key][]byte, len(recs))
	ids := make([]Key, len(recs))
	byID := make(map[Key]Record, len(recs))
	for i, rec := range recs {
		ids[i], byID[rec.Key] = rec.Key, rec
	}
	var bad []error
	err := l.batchGet(ctx, "get payloads", ids, skPayload, true, func(id Key, item map[string]types.AttributeValue) {
		if ofRecord(item, byID[id]) != "" {
			return // an earlier event's: this record has none
		}
		body, err := decodePayload(id, item)
		if err != nil {
			bad = append(bad, err)
			return
		}
		out[id] = body
	})
	if len(bad) > 0 {
		err = errors.Join(append([]error{err}, bad...)...)
	}
	return out, err
}

// batchGet reads the items (ids, sk) with BatchGetItem, retrying
// unprocessed keys a few times with backoff, and hands each to found.
func (l *Ledger) batchGet(ctx context.Context, op string, ids []Key, sk string, consistent bool, found func(Key, map[string]types.AttributeValue)) error {
	seen := make(map[Key]bool, len(ids))
	byPK := make(map[string]Key, len(ids))
	var keys []map[string]types.AttributeValue
	for _, id := range ids {
		if seen[id] {
			continue // BatchGetItem refuses duplicate keys
		}
		if err := id.Validate(); err != nil {
			return err
		}
		seen[id] = true
		byPK[id.PK()] = id
		keys = append(keys, key(id, sk))
	}
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), batchGetMax)]
		keys = keys[len(chunk):]
		for attempt := 0; len(chunk) > 0; attempt++ {
			if attempt > 0 {
				if attempt > 5 {
					return fmt.Errorf("%s: %w: %d keys still unprocessed after %d attempts", op, ErrUnavailable, len(chunk)+len(keys), attempt)
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, ctx.Err())
				case <-time.After(time.Duration(25<<attempt) * time.Millisecond):
				}
			}
			out, err := l.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				l.opt.Table: {Keys: chunk, ConsistentRead: aws.Bool(consistent)},
			}})
			if err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
				}
				return fmt.Errorf("%s: %w: %v", op, ErrUnavailable, err)
			}
			for _, item := range out.Responses[l.opt.Table] {
				if id, ok := byPK[dynamo.GetS(item, attrPK)]; ok && dynamo.GetS(item, attrSK) == sk {
					found(id, item)
				}
			}
			chunk = out.UnprocessedKeys[l.opt.Table].Keys
		}
	}
	return nil
}

// Since is when the record's time for retries started: its creation, or
// the operator's last replay.
func (r Record) Since() time.Time {
	if r.ReplayedAt.After(r.CreatedAt) {
		return r.ReplayedAt
	}
	return r.CreatedAt
}

// notBefore is t, or now when t has passed. A due time never precedes its
// write, so the reclaimer's marks (DueMarks) can trail by a fixed lag and
// still find every record that comes due again.
func (l *Ledger) notBefore(t time.Time) time.Time {
	if now := l.now(); t.Before(now) {
		return now
	}
	return t
}

// versioned runs a reclaimer transition: one write conditioned on the
// version the caller read (plus extra). Its request token (written_by) lets
// a write retried after a lost answer recognise itself.
func (l *Ledger) versioned(ctx context.Context, op string, rec Record, p *exprParts, extra string) (Record, error) {
	if err := rec.Key.Validate(); err != nil {
		return Record{}, err
	}
	now := l.now()
	token := dynamo.NewToken()
	p.vals[":ver"] = dynamo.N(rec.Version)
	p.vals[":by"] = dynamo.S(token)
	p.vals[":now"] = dynamo.Millis(now)
	p.set = append(p.set, attrWriter+" = :by")
	if rec.Format < Format {
		sets, vals := counterSets(rec) // the first write keeps what fromFormat1 derived
		p.set = append(p.set, sets...)
		maps.Copy(p.vals, vals)
	}
	cond := "ver = :ver"
	if extra != "" {
		cond += " AND " + extra
	}
	// A write whose answer was lost is ours all the same, and the caller
	// must go on (the reclaimer enqueues after Requeue and Reset).
	out, old, refused, err := l.update(ctx, op, rec.Key, p, cond, func(r Record) bool { return r.Version == rec.Version+1 && r.writer == token })
	if err != nil || !refused {
		return out, err
	}
	if old == nil {
		return Record{}, fmt.Errorf("%s %s: %w", op, rec.Key, ErrNotFound)
	}
	return Record{}, &StateError{Op: op, Err: ErrConflict, Record: *old}
}

// Requeue records that the reclaimer re-drove a received or failed record:
// reclaims+1 and due_at moved to next. The caller enqueues after it succeeds.
func (l *Ledger) Requeue(ctx context.Context, rec Record, next time.Time) (Record, error) {
	return l.versioned(ctx, "requeue", rec,
		parts([]string{"due_at = :next", "reclaims = reclaims + :one", "updated_at = :now"}, nil,
			map[string]types.AttributeValue{":next": dynamo.Millis(l.notBefore(next)), ":received": dynamo.S(string(Received)), ":failed": dynamo.S(string(Failed))}),
		"#st IN (:received, :failed)")
}

// Reset returns a processing record whose lease expired to received
// (reclaims+1, due_at next), dropping the dead worker's lease. The steps it
// recorded stay: the next attempt resumes after the last one done.
func (l *Ledger) Reset(ctx context.Context, rec Record, next time.Time) (Record, error) {
	p := parts([]string{"#st = :received", "due_at = :next", "reclaims = reclaims + :one", "updated_at = :now"}, []string{"lease_owner", "lease_until"},
		map[string]types.AttributeValue{":next": dynamo.Millis(l.notBefore(next)), ":received": dynamo.S(string(Received)), ":processing": dynamo.S(string(Processing))})
	p.endRun(rec, RunInterrupted, "", l.now())
	return l.versioned(ctx, "reset", rec, p, "#st = :processing AND lease_until <= :now")
}

// Unsent takes back the reclaim a Requeue or Reset counted when SQS failed
// its message: reclaims-1 and due_at moved to next, so a failed send does
// not use up a reclaim. rec is the record as Requeue or Reset returned it;
// any write since makes Unsent a conflict that changes nothing.
func (l *Ledger) Unsent(ctx context.Context, rec Record, next time.Time) (Record, error) {
	return l.versioned(ctx, "unsent", rec,
		parts([]string{"due_at = :next", "reclaims = reclaims - :one"}, nil,
			map[string]types.AttributeValue{":next": dynamo.Millis(l.notBefore(next)), ":zero": dynamo.N(0)}),
		"reclaims > :zero")
}

// The reclaimer's run lock is one item beside the records, never in the
// due index nor listed. It also keeps the reclaimer's marks (DueMarks).
const (
	runLockPK   = "reclaimer#run"
	runLockSK   = "lock"
	attrLockBy  = "lock_owner"
	attrLockTo  = "lock_until"
	attrMarks   = "due_marks"
	marksMinAge = 24 * time.Hour // the item outlives the last run by at least this
)

// DueMarks is how far the reclaimer has looked through each shard: every
// entry of shard s due at or before DueMarks[s] was read, and its record
// was terminal or due later (with an entry of its own past the mark). A
// shard without a mark is walked from its oldest entry. A mark too early
// costs reads; one too late hides records, so a run moves a mark only past
// entries it settled.
type DueMarks map[int]time.Time

func (m DueMarks) attr() types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(m))
	for shard, t := range m {
		out[strconv.Itoa(shard)] = dynamo.Millis(t)
	}
	return &types.AttributeValueMemberM{Value: out}
}

func decodeMarks(item map[string]types.AttributeValue) DueMarks {
	m, _ := item[attrMarks].(*types.AttributeValueMemberM)
	out := DueMarks{}
	if m == nil {
		return out
	}
	for k, v := range m.Value {
		shard, err := strconv.Atoi(k)
		if num, ok := v.(*types.AttributeValueMemberN); err == nil && ok {
			if t, err := strconv.ParseInt(num.Value, 10, 64); err == nil && shard >= 0 {
				out[shard] = time.UnixMilli(t).UTC()
			}
		}
	}
	return out
}

// markExpiry is when the run lock item may go: not before marksMinAge after
// the lock's end, nor before the retention. The marks must outlive a pause
// in the reclaimer's runs, or the next run reads every entry again.
func (l *Ledger) markExpiry(until time.Time) types.AttributeValue {
	exp := until.Add(marksMinAge)
	if r := l.now().Add(l.opt.Retention); r.After(exp) {
		exp = r
	}
	return dynamo.N(exp.Unix())
}

// LockRun takes the reclaimer's run lock for owner until until, with one
// conditional write. It succeeds when the lock is free, expired, or held by
// owner (a run handing over to its continuation); otherwise ErrLeased. The
// lock only saves work, since every reclaim is conditional on its own: it
// keeps overlapping runs off the same shards. It returns the stored marks.
func (l *Ledger) LockRun(ctx context.Context, owner string, until time.Time) (DueMarks, error) {
	if owner == "" {
		return nil, fmt.Errorf("%w: empty run lock owner", ErrInvalid)
	}
	now := l.now()
	out, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &l.opt.Table,
		Key:                 map[string]types.AttributeValue{attrPK: dynamo.S(runLockPK), attrSK: dynamo.S(runLockSK)},
		UpdateExpression:    aws.String("SET " + attrLockBy + " = :me, " + attrLockTo + " = :until, " + attrExpires + " = :exp"),
		ConditionExpression: aws.String("attribute_not_exists(" + attrLockBy + ") OR " + attrLockTo + " <= :now OR " + attrLockBy + " = :me"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": dynamo.S(owner), ":until": dynamo.Millis(until), ":now": dynamo.Millis(now), ":exp": l.markExpiry(until),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil, fmt.Errorf("reclaimer run lock: %w", ErrLeased)
	}
	if err != nil {
		return nil, fmt.Errorf("reclaimer run lock: %w: %v", ErrUnavailable, err)
	}
	return decodeMarks(out.Attributes), nil
}

// UnlockRun releases the run lock if owner holds it, storing marks (nil:
// keep the stored ones) in the same write; otherwise it stores the marks
// alone (SaveDueMarks).
func (l *Ledger) UnlockRun(ctx context.Context, owner string, marks DueMarks) error {
	expr := "REMOVE " + attrLockBy + ", " + attrLockTo
	vals := map[string]types.AttributeValue{":me": dynamo.S(owner)}
	if marks != nil {
		expr = "SET " + attrMarks + " = :marks " + expr
		vals[":marks"] = marks.attr()
	}
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &l.opt.Table,
		Key:                       map[string]types.AttributeValue{attrPK: dynamo.S(runLockPK), attrSK: dynamo.S(runLockSK)},
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(attrLockBy + " = :me"),
		ExpressionAttributeValues: vals,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf) && marks != nil:
		return l.SaveDueMarks(ctx, marks)
	case err != nil && !errors.As(err, &ccf):
		return fmt.Errorf("reclaimer run unlock: %w: %v", ErrUnavailable, err)
	}
	return nil
}

// ReadDueMarks reads the stored marks with an eventually consistent read (an
// older value is only an earlier mark). No item yet: no marks.
func (l *Ledger) ReadDueMarks(ctx context.Context) (DueMarks, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &l.opt.Table, Key: map[string]types.AttributeValue{attrPK: dynamo.S(runLockPK), attrSK: dynamo.S(runLockSK)},
		ProjectionExpression: aws.String(attrMarks),
	})
	if err != nil {
		return nil, fmt.Errorf("reclaimer due marks: %w: %v", ErrUnavailable, err)
	}
	return decodeMarks(out.Item), nil
}

// SaveDueMarks stores marks whoever holds the run lock. Overlapping runs
// may store in either order; each run's marks hold for what it looked at,
// so the last stored is right too, at worst earlier.
func (l *Ledger) SaveDueMarks(ctx context.Context, marks DueMarks) error {
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        &l.opt.Table,
		Key:              map[string]types.AttributeValue{attrPK: dynamo.S(runLockPK), attrSK: dynamo.S(runLockSK)},
		UpdateExpression: aws.String("SET " + attrMarks + " = :marks, " + attrExpires + " = if_not_exists(" + attrExpires + ", :exp)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":marks": marks.attr(), ":exp": l.markExpiry(l.now()),
		},
	})
	if err != nil {
		return fmt.Errorf("reclaimer due marks: %w: %v", ErrUnavailable, err)
	}
	return nil
}

// Postpone moves due_at of a record that is not yet overdue in fact (a live
// lease) to next, without counting a reclaim.
func (l *Ledger) Postpone(ctx context.Context, rec Record, next time.Time) (Record, error) {
	return l.versioned(ctx, "postpone", rec, parts([]string{"due_at = :next"}, nil, map[string]types.AttributeValue{":next": dynamo.Millis(l.notBefore(next))}), "")
}

// BuryStale marks dead a non-terminal record nobody holds (past its
// give-up time, payload lost): Bury for the reclaimer, which holds no
// lease.
func (l *Ledger) BuryStale(ctx context.Context, rec Record, cause string) (Record, error) {
	p := parts([]string{"#st = :dead", "updated_at = :now", "last_error = :err", deadSet}, []string{"lease_owner", "lease_until", "due_shard", "due_at"},
		map[string]types.AttributeValue{
			":dead": dynamo.S(string(Dead)), ":done": dynamo.S(string(Done)), ":processing": dynamo.S(string(Processing)), ":err": dynamo.S(trim(cause)),
			":deadshard": dynamo.N(int64(shardOf(rec.PK(), l.opt.Shards))),
		})
	p.endRun(rec, RunInterrupted, "", l.now())
	return l.versioned(ctx, "bury", rec, p, "NOT #st IN (:done, :dead) AND (#st <> :processing OR lease_until <= :now)")
}

// Replay is the operator's way back from dead or failed. The record
// returns to received with its counters reset, replayed_at set (its time
// for retries starts again), a fresh due time, and the step changes
// applied: mark a step done after checking its effect by hand, or clear it
// to run again. The caller enqueues it. Repeating is safe: effects keep
// their downstream keys. A lease end a failed record kept (Fail) stays: a
// request sent under that lease may yet take effect.
func (l *Ledger) Replay(ctx context.Context, id Key, changes ...StepChange) (Record, error) {
	return l.replay(ctx, id, false, changes)
}

// replay is Replay, and ReplayApplyStale when applyStale is set.
func (l *Ledger) replay(ctx context.Context, id Key, applyStale bool, changes []StepChange) (Record, error) {
	if err := id.Validate(); err != nil {
		return Record{}, err
	}
	now := l.now()
	token := dynamo.NewToken()
	p := parts([]string{"#st = :received", "attempts = :zero", attrFailures + " = :zero", attrInterrupts + " = :zero", attrGivenBack + " = :zero", "reclaims = :zero",
		"updated_at = :now", attrReplayed + " = :now", "due_shard = :shard", "due_at = :due", attrWriter + " = :by"},
		[]string{"lease_owner", attrDeadShard, attrDeadAt},
		map[string]types.AttributeValue{
			":received": dynamo.S(string(Received)), ":dead": dynamo.S(string(Dead)), ":failed": dynamo.S(string(Failed)),
			":zero": dynamo.N(0), ":now": dynamo.Millis(now), ":nows": dynamo.N(now.Unix()), ":by": dynamo.S(token),
			":shard": dynamo.N(int64(shardOf(id.PK(), l.opt.Shards))), ":due": dynamo.Millis(now.Add(l.opt.ReclaimAfter)),
		})
	if applyStale {
		p.set = append(p.set, attrApplyStale+" = :now")
	}
	if err := p.addSteps(changes, now, nil); err != nil {
		return Record{}, err
	}
	rec, old, refused, err := l.update(ctx, "replay", id, p, "attribute_exists(pk) AND expires_at > :nows AND #st IN (:dead, :failed)",
		func(r Record) bool { return r.Status == Received && r.writer == token })
	if err != nil || !refused {
		return rec, err
	}
	if old == nil {
		return Record{}, fmt.Errorf("replay %s: %w", id, ErrNotFound)
	}
	return Record{}, &StateError{Op: "replay", Err: ErrConflict, Record: *old}
}

// List scans for records in status (all when empty), up to limit. It reads
// the whole table: for operators and tests, not hot paths.
func (l *Ledger) List(ctx context.Context, status Status, limit int) ([]Record, error) {
	if status != "" && !status.Valid() {
		return nil, fmt.Errorf("%w: unknown status %q (want received, processing, done, failed or dead)", ErrInvalid, status)
	}
	filter := "sk = :r"
	vals := map[string]types.AttributeValue{":r": dynamo.S(skRecord)}
	var names map[string]string
	if status != "" {
		filter += " AND #st = :st"
		vals[":st"] = dynamo.S(string(status))
		names = map[string]string{"#st": attrStatus}
	}
	var recs []Record
	var start map[string]types.AttributeValue
	now := l.now()
	for {
		out, err := l.db.Scan(ctx, &dynamodb.ScanInput{
			TableName: &l.opt.Table, FilterExpression: &filter, ExpressionAttributeValues: vals,
			ExpressionAttributeNames: names, ExclusiveStartKey: start, ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			what := "all records"
			if status != "" {
				what = string(status) + " records"
			}
			return nil, fmt.Errorf("scan table %s for %s: %w: %v", l.opt.Table, what, ErrUnavailable, err)
		}
		for _, it := range out.Items {
			r := decodeRecord(it)
			if r.Expired(now) {
				continue
			}
			recs = append(recs, r)
			if limit > 0 && len(recs) >= limit {
				return recs, nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return recs, nil
		}
		start = out.LastEvaluatedKey
	}
}

// Counts tallies records by status (a full scan; for operators and tests).
func (l *Ledger) Counts(ctx context.Context) (map[Status]int, error) {
	recs, err := l.List(ctx, "", 0)
	if err != nil {
		return nil, err
	}
	c := map[Status]int{}
	for _, r := range recs {
		c[r.Status]++
	}
	return c, nil
}
