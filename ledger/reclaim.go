package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Due returns up to limit identities in shard whose due_at is at or before
// now, oldest first. The index is eventually consistent and projects keys
// only: read each record (Get, GetMany) before acting on it.
func (l *Ledger) Due(ctx context.Context, shard int, now time.Time, limit int) ([]ID, error) {
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

// DueFrom is Due as a walk: it returns the next page of up to limit due
// identities after from, and the cursor for the page after it (Done when
// there is none). Walking on, rather than asking again from the oldest,
// never reads an entry twice, however far the eventually consistent index
// lags behind the writes that moved the records already handled.
func (l *Ledger) DueFrom(ctx context.Context, shard int, now time.Time, limit int, from DueCursor) ([]ID, DueCursor, error) {
	if shard < 0 || shard >= l.opt.Shards {
		return nil, from, fmt.Errorf("%w: shard %d out of range 0..%d", ErrInvalid, shard, l.opt.Shards-1)
	}
	if limit <= 0 {
		return nil, from, fmt.Errorf("%w: limit %d must be positive", ErrInvalid, limit)
	}
	if from.done {
		return nil, from, nil
	}
	out, err := l.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              &l.opt.Table,
		IndexName:              aws.String(DueIndex),
		KeyConditionExpression: aws.String("due_shard = :shard AND due_at <= :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": n(int64(shard)), ":now": ms(now),
		},
		Limit:             aws.Int32(int32(limit)),
		ExclusiveStartKey: from.after,
	})
	if err != nil {
		return nil, from, fmt.Errorf("due shard %d: %w: %v", shard, ErrUnavailable, err)
	}
	ids := make([]ID, 0, len(out.Items))
	for _, it := range out.Items {
		if getS(it, attrSK) != skRecord {
			continue
		}
		id, err := ParsePK(getS(it, attrPK))
		if err != nil {
			continue // not one of ours; never act on it
		}
		ids = append(ids, id)
	}
	next := DueCursor{after: out.LastEvaluatedKey, done: len(out.LastEvaluatedKey) == 0}
	return ids, next, nil
}

// batchGetMax is the most keys one BatchGetItem takes.
const batchGetMax = 100

// GetMany reads the records of ids with consistent reads, up to 100 per
// BatchGetItem request (each record is billed as its own read). A record
// that does not exist or has expired is absent from the result. On error the
// result holds what was read; the ids it lacks are unknown, not absent.
func (l *Ledger) GetMany(ctx context.Context, ids []ID) (map[ID]Record, error) {
	out := make(map[ID]Record, len(ids))
	now := l.now()
	err := l.batchGet(ctx, "get records", ids, skRecord, func(id ID, item map[string]types.AttributeValue) {
		if r := decodeRecord(item); !r.Expired(now) {
			out[id] = r
		}
	})
	return out, err
}

// Payloads reads the bodies of recs (as PayloadOf does, up to 100 per
// BatchGetItem request). Without error, a record absent from the result has
// no stored body (none, or only one an earlier event under its key left);
// on error the result holds what was read and the records it lacks are
// unknown.
func (l *Ledger) Payloads(ctx context.Context, recs []Record) (map[ID][]byte, error) {
	out := make(map[ID][]byte, len(recs))
	ids := make([]ID, len(recs))
	byID := make(map[ID]Record, len(recs))
	for i, rec := range recs {
		ids[i], byID[rec.ID] = rec.ID, rec
	}
	var bad []error
	err := l.batchGet(ctx, "get payloads", ids, skPayload, func(id ID, item map[string]types.AttributeValue) {
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

// batchGet reads the items (ids, sk) with consistent BatchGetItem requests,
// retrying unprocessed keys a few times with backoff, and hands each item
// found to found with its identity.
func (l *Ledger) batchGet(ctx context.Context, op string, ids []ID, sk string, found func(ID, map[string]types.AttributeValue)) error {
	seen := make(map[ID]bool, len(ids))
	byPK := make(map[string]ID, len(ids))
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
				l.opt.Table: {Keys: chunk, ConsistentRead: aws.Bool(true)},
			}})
			if err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
				}
				return fmt.Errorf("%s: %w: %v", op, ErrUnavailable, err)
			}
			for _, item := range out.Responses[l.opt.Table] {
				if id, ok := byPK[getS(item, attrPK)]; ok && getS(item, attrSK) == sk {
					found(id, item)
				}
			}
			chunk = out.UnprocessedKeys[l.opt.Table].Keys
		}
	}
	return nil
}

// versioned runs a reclaimer transition: one conditional write that holds
// only if the record is still at the version the caller read (plus extra).
// The write carries a request token (written_by), so a write retried after
// its answer was lost recognises itself.
func (l *Ledger) versioned(ctx context.Context, op string, rec Record, p *exprParts, extra string) (Record, error) {
	if err := rec.ID.Validate(); err != nil {
		return Record{}, err
	}
	now := l.now()
	token := newToken()
	p.vals[":ver"] = n(rec.Version)
	p.vals[":by"] = s(token)
	p.vals[":now"] = ms(now)
	p.set = append(p.set, attrWriter+" = :by")
	cond := "ver = :ver"
	if extra != "" {
		cond += " AND " + extra
	}
	out, old, failed, err := l.update(ctx, op, rec.ID, p, cond)
	if err != nil {
		if r, ok := l.readBack(ctx, rec.ID, err, func(r Record) bool { return r.Version == rec.Version+1 && r.writer == token }); ok {
			return r, nil
		}
		return Record{}, err
	}
	if !failed {
		return out, nil
	}
	if old == nil {
		return Record{}, fmt.Errorf("%s %s: %w", op, rec.ID, ErrNotFound)
	}
	if old.Version == rec.Version+1 && old.writer == token {
		// The SDK retried a write whose first attempt succeeded but whose
		// answer was lost: the transition is ours, and the caller must go
		// on (the reclaimer enqueues after Requeue and Reset).
		return *old, nil
	}
	return Record{}, &StateError{Op: op, Err: ErrConflict, Record: *old}
}

// Requeue records that the reclaimer re-drove a received or failed record:
// reclaims+1 and due_at moved to next. The caller enqueues after it succeeds.
func (l *Ledger) Requeue(ctx context.Context, rec Record, next time.Time) (Record, error) {
	return l.versioned(ctx, "requeue", rec,
		parts([]string{"due_at = :next", "reclaims = reclaims + :one", "updated_at = :now"}, nil,
			map[string]types.AttributeValue{":next": ms(next), ":received": s(string(Received)), ":failed": s(string(Failed))}),
		"#st IN (:received, :failed)")
}

// Reset returns a processing record whose lease expired to received
// (reclaims+1, due_at next), dropping the dead worker's lease. The steps it
// recorded stay: the next attempt resumes after the last one done.
func (l *Ledger) Reset(ctx context.Context, rec Record, next time.Time) (Record, error) {
	return l.versioned(ctx, "reset", rec,
		parts([]string{"#st = :received", "due_at = :next", "reclaims = reclaims + :one", "updated_at = :now"}, []string{"lease_owner", "lease_until"},
			map[string]types.AttributeValue{":next": ms(next), ":received": s(string(Received)), ":processing": s(string(Processing))}),
		"#st = :processing AND lease_until <= :now")
}

// Unsent takes back the reclaim a Requeue or Reset counted when the message
// it announced never reached the queue (SQS failed that entry): reclaims-1
// and due_at moved to next, so the record is re-driven again at next without
// the failed send using up one of its reclaims. rec is the record as
// Requeue or Reset returned it; if anything wrote the record since, Unsent
// is a conflict and changes nothing.
func (l *Ledger) Unsent(ctx context.Context, rec Record, next time.Time) (Record, error) {
	return l.versioned(ctx, "unsent", rec,
		parts([]string{"due_at = :next", "reclaims = reclaims - :one"}, nil,
			map[string]types.AttributeValue{":next": ms(next), ":zero": n(0)}),
		"reclaims > :zero")
}

// The reclaimer's run lock is one item beside the records (never in the due
// index, never listed: its sort key is not a record's).
const (
	runLockPK  = "reclaimer#run"
	runLockSK  = "lock"
	attrLockBy = "lock_owner"
	attrLockTo = "lock_until"
)

// LockRun takes the reclaimer's run lock for owner until until, with one
// conditional write: it succeeds when nobody holds the lock, when its
// holder's time has passed (by the ledger's clock), or when owner holds it
// already (a run handing over to its continuation). Otherwise it returns
// ErrLeased. The lock only saves work — every reclaim is a conditional
// write of its own — so that overlapping schedule ticks, continuations and
// manual runs do not walk the same shards side by side.
func (l *Ledger) LockRun(ctx context.Context, owner string, until time.Time) error {
	if owner == "" {
		return fmt.Errorf("%w: empty run lock owner", ErrInvalid)
	}
	now := l.now()
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           &l.opt.Table,
		Key:                 map[string]types.AttributeValue{attrPK: s(runLockPK), attrSK: s(runLockSK)},
		UpdateExpression:    aws.String("SET " + attrLockBy + " = :me, " + attrLockTo + " = :until, " + attrExpires + " = :exp"),
		ConditionExpression: aws.String("attribute_not_exists(" + attrLockBy + ") OR " + attrLockTo + " <= :now OR " + attrLockBy + " = :me"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":me": s(owner), ":until": ms(until), ":now": ms(now), ":exp": n(until.Add(24 * time.Hour).Unix()),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("reclaimer run lock: %w", ErrLeased)
	}
	if err != nil {
		return fmt.Errorf("reclaimer run lock: %w: %v", ErrUnavailable, err)
	}
	return nil
}

// UnlockRun releases the run lock if owner still holds it; otherwise it
// does nothing.
func (l *Ledger) UnlockRun(ctx context.Context, owner string) error {
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &l.opt.Table,
		Key:                       map[string]types.AttributeValue{attrPK: s(runLockPK), attrSK: s(runLockSK)},
		UpdateExpression:          aws.String("REMOVE " + attrLockBy + ", " + attrLockTo),
		ConditionExpression:       aws.String(attrLockBy + " = :me"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": s(owner)},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("reclaimer run unlock: %w: %v", ErrUnavailable, err)
	}
	return nil
}

// Postpone moves due_at of a record that is not yet overdue in fact (a live
// lease) to next, without counting a reclaim.
func (l *Ledger) Postpone(ctx context.Context, rec Record, next time.Time) (Record, error) {
	return l.versioned(ctx, "postpone", rec, parts([]string{"due_at = :next"}, nil, map[string]types.AttributeValue{":next": ms(next)}), "")
}

// BuryStale marks dead a non-terminal record nobody holds (past its
// give-up time, payload lost): Bury for the reclaimer, which holds no
// lease.
func (l *Ledger) BuryStale(ctx context.Context, rec Record, cause string) (Record, error) {
	return l.versioned(ctx, "bury", rec,
		parts([]string{"#st = :dead", "updated_at = :now", "last_error = :err"}, []string{"lease_owner", "lease_until", "due_shard", "due_at"},
			map[string]types.AttributeValue{
				":dead": s(string(Dead)), ":done": s(string(Done)), ":processing": s(string(Processing)), ":err": s(trim(cause)),
			}),
		"NOT #st IN (:done, :dead) AND (#st <> :processing OR lease_until <= :now)")
}

// Replay is the operator's way back from dead or failed: the record returns
// to received with its counters (attempts, failures, interrupted, reclaims)
// reset, replayed_at set (the event's time for retries starts again from
// it; see the package doc) and a fresh due time, and
// the given step changes applied (mark a step done with its result after
// checking by hand that its effect happened, or clear it so it runs again).
// The caller enqueues it. Replaying is safe to repeat: effects carry the
// same downstream idempotency keys as before. A lease end that a failed
// record kept (see Fail) stays: the claim still waits for it, since a
// request sent under that lease may yet take effect.
func (l *Ledger) Replay(ctx context.Context, id ID, changes ...StepChange) (Record, error) {
	return l.replay(ctx, id, false, changes)
}

// replay is Replay, and ReplayApplyStale when applyStale is set.
func (l *Ledger) replay(ctx context.Context, id ID, applyStale bool, changes []StepChange) (Record, error) {
	if err := id.Validate(); err != nil {
		return Record{}, err
	}
	now := l.now()
	token := newToken()
	p := parts([]string{"#st = :received", "attempts = :zero", attrFailures + " = :zero", attrInterrupts + " = :zero", "reclaims = :zero",
		"updated_at = :now", attrReplayed + " = :now", "due_shard = :shard", "due_at = :due", attrWriter + " = :by"},
		[]string{"lease_owner"},
		map[string]types.AttributeValue{
			":received": s(string(Received)), ":dead": s(string(Dead)), ":failed": s(string(Failed)),
			":zero": n(0), ":now": ms(now), ":nows": n(now.Unix()), ":by": s(token),
			":shard": n(int64(shardOf(id.PK(), l.opt.Shards))), ":due": ms(now.Add(l.opt.ReclaimAfter)),
		})
	if applyStale {
		p.set = append(p.set, attrApplyStale+" = :now")
	}
	if err := p.addSteps(changes, now); err != nil {
		return Record{}, err
	}
	rec, old, failed, err := l.update(ctx, "replay", id, p, "attribute_exists(pk) AND expires_at > :nows AND #st IN (:dead, :failed)")
	if err != nil {
		if r, ok := l.readBack(ctx, id, err, func(r Record) bool { return r.Status == Received && r.writer == token }); ok {
			return r, nil
		}
		return Record{}, err
	}
	if !failed {
		return rec, nil
	}
	if old == nil {
		return Record{}, fmt.Errorf("replay %s: %w", id, ErrNotFound)
	}
	if old.Status == Received && old.writer == token {
		return *old, nil // our own write, retried after its answer was lost
	}
	return Record{}, &StateError{Op: "replay", Err: ErrConflict, Record: *old}
}

// List scans for records in status (all statuses when empty), up to limit.
// It reads the whole table and is meant for operators and tests, not for hot
// paths.
func (l *Ledger) List(ctx context.Context, status Status, limit int) ([]Record, error) {
	if status != "" && !status.Valid() {
		return nil, fmt.Errorf("%w: unknown status %q (want received, processing, done, failed or dead)", ErrInvalid, status)
	}
	filter := "sk = :r"
	vals := map[string]types.AttributeValue{":r": s(skRecord)}
	var names map[string]string
	if status != "" {
		filter += " AND #st = :st"
		vals[":st"] = s(string(status))
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
