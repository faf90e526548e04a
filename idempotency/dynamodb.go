package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// API is the slice of the DynamoDB client a Store calls: the three actions
// its IAM policy needs (PutItem, UpdateItem, GetItem on the table).
type API = dynamo.ItemAPI

// The stored format of a record: one item per key, in a table with string
// keys pk and sk and TTL on expires_at (TableInput), which may be the
// hookledger ledger's table.
//
//   - pk is "idem#" followed by the stored key (KeyOf: "operation#" and a
//     SHA-256 hex digest); sk is "idem". The ledger's items start "ev#" or
//     "rg#" and use other sort keys, and the ledger reads only its own, so
//     the two share a table without meeting.
//   - A record never carries due_shard or due_at, the attributes of the
//     ledger's due index: no reclaimer can re-run a synchronous call (its
//     caller is gone), recovery is the caller's retry once the lease ends,
//     and staying off the index keeps every write at table units only.
//   - The status values are the ledger's words (processing, done, failed),
//     and the attribute names the ledger's where they mean the same thing,
//     so that an operator reading a shared table meets one vocabulary.
//
// Tables and records written by earlier versions must keep working: this
// format is pinned, request by request, by TestDynamoDBRequestsGolden. The
// names and layout are this package's own; only the mechanics (attribute
// codec, tokens, gzip, settling a write) are package dynamo's, which the
// ledger uses too.
const (
	keyPrefix = "idem#"
	skRecord  = "idem"

	attrPK         = "pk"
	attrSK         = "sk"
	attrStatus     = "status"
	attrAttempts   = "attempts"
	attrOwner      = "lease_owner"
	attrLeaseUntil = "lease_until"
	attrCreated    = "created_at"
	attrUpdated    = "updated_at"
	attrExpires    = "expires_at"
	attrLastError  = "last_error"
	attrVersion    = "ver"
	attrValidation = "validation"
	attrResult     = "result"
	attrResultEnc  = "result_enc"
	attrResultSize = "result_size"
	attrStoredSize = "stored_size"
	attrUnstored   = "unstored"

	compressAbove = 512 // the result size from which gzip is tried
	maxLastError  = 256 // bytes of a failure's text kept
	maxUnstored   = 512 // bytes of an unstored reason kept
	claimTries    = 3   // take-overs tried while other claims change the record
)

// dynamoBackend keeps records in a DynamoDB table. Safe for concurrent use.
type dynamoBackend struct {
	db    API
	table string
	clock func() time.Time
}

var _ Backend = (*dynamoBackend)(nil)

func (d *dynamoBackend) now() time.Time { return d.clock().UTC() }

func validKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("%w: key is empty", ErrInvalid)
	case len(k) > MaxKeyBytes:
		return fmt.Errorf("%w: key is %d bytes, over %d", ErrInvalid, len(k), MaxKeyBytes)
	case !utf8.ValidString(k):
		return fmt.Errorf("%w: key is not valid UTF-8", ErrInvalid)
	}
	return nil
}

func itemKey(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: dynamo.S(keyPrefix + k), attrSK: dynamo.S(skRecord)}
}

func decodeRecord(item map[string]types.AttributeValue) (Record, error) {
	r := Record{
		Key:        strings.TrimPrefix(dynamo.GetS(item, attrPK), keyPrefix),
		Status:     Status(dynamo.GetS(item, attrStatus)),
		Attempts:   int(dynamo.GetN(item, attrAttempts)),
		LeaseOwner: dynamo.GetS(item, attrOwner),
		LeaseUntil: dynamo.GetMillis(item, attrLeaseUntil),
		CreatedAt:  dynamo.GetMillis(item, attrCreated),
		UpdatedAt:  dynamo.GetMillis(item, attrUpdated),
		Validation: dynamo.GetS(item, attrValidation),
		ResultSize: int(dynamo.GetN(item, attrResultSize)),
		StoredSize: int(dynamo.GetN(item, attrStoredSize)),
		Unstored:   dynamo.GetS(item, attrUnstored),
		LastError:  dynamo.GetS(item, attrLastError),
		Version:    dynamo.GetN(item, attrVersion),
	}
	if e := dynamo.GetN(item, attrExpires); e != 0 {
		r.ExpiresAt = time.Unix(e, 0).UTC()
	}
	if b, ok := item[attrResult].(*types.AttributeValueMemberB); ok {
		r.Result = b.Value
		if dynamo.GetS(item, attrResultEnc) == "gzip" {
			z, err := dynamo.Decompress(b.Value, MaxResultDecodedBytes)
			if err != nil {
				return r, fmt.Errorf("record %s: %w: gzip result: %w (forget the key or wait for its window to end)", r.Key, ErrCorruptResult, err)
			}
			r.Result = z
		}
	}
	return r, nil
}

// claimExpiry is the expires_at (whole seconds, as TTL reads it) a claim
// writes: the requested window, but never before the lease ends, so that
// neither a new claim nor TTL can remove a record whose holder is still
// running. Completion then sets the real window.
func claimExpiry(c Claim) int64 {
	exp := c.ExpiresAt.Unix()
	lease := c.LeaseUntil.Unix()
	if c.LeaseUntil.After(time.Unix(lease, 0)) {
		lease++ // round the lease end up to the second
	}
	return max(exp, lease)
}

// The condition under which a claim's put may replace what is stored: no
// record, or one whose window has passed and that no live lease holds (see
// Record.Expired; the two must agree). :nows is now in seconds, :nowms in
// milliseconds, both from one clock reading.
const claimPutCondition = "attribute_not_exists(pk) OR (expires_at <= :nows AND (#st <> :processing OR lease_until <= :nowms))"

// claimable reports whether an existing, unexpired record may be taken
// over by a claim with validation digest v: one in progress whose lease has
// lapsed (its caller crashed or timed out), or a failed one with attempts
// left, and in both cases only for the payload the key was first used
// with. A claim whose digest differs from the stored one is refused (the
// store reports a payload mismatch) rather than running another payload
// under the key, which would turn the original client's retry into a
// mismatch.
func (r Record) claimable(now time.Time, maxAttempts int, v string) bool {
	if v != "" && r.Validation != "" && v != r.Validation {
		return false
	}
	switch r.Status {
	case StatusInProgress:
		return !now.Before(r.LeaseUntil)
	case StatusFailed:
		return maxAttempts <= 0 || r.Attempts < maxAttempts
	}
	return false
}

// Claim implements Backend. A new key (or one whose window expired) is one
// conditional PutItem; a repeat is that one failed put, which returns the
// stored record (ALL_OLD), so no read follows. Taking over a lapsed lease
// or a failed call adds one conditional UpdateItem that counts the
// attempt. If other claims keep changing the record through 3 retries, the
// error matches ErrUnavailable (retryable) and ErrConflict.
func (d *dynamoBackend) Claim(ctx context.Context, key string, c Claim) (rec Record, claimed bool, err error) {
	if err := validKey(key); err != nil {
		return Record{}, false, err
	}
	now := d.now()
	if !c.LeaseUntil.After(now) || !c.ExpiresAt.After(now) {
		return Record{}, false, fmt.Errorf("%w: claim of %s: lease end and expiry must be after now", ErrInvalid, key)
	}
	token := dynamo.NewToken()
	exp := claimExpiry(c)
	mine := func(o Record) bool { return o.LeaseOwner == token && o.Status == StatusInProgress }
	// put claims an absent or expired record, judging expiry at now (the
	// same reading for the condition and for the record it returns).
	put := func(now time.Time) (Record, error) {
		item := itemKey(key)
		for k, v := range map[string]types.AttributeValue{
			attrStatus: dynamo.S(string(StatusInProgress)), attrOwner: dynamo.S(token), attrLeaseUntil: dynamo.Millis(c.LeaseUntil),
			attrAttempts: dynamo.N(1), attrCreated: dynamo.Millis(now), attrUpdated: dynamo.Millis(now),
			attrExpires: dynamo.N(exp), attrVersion: dynamo.N(1),
		} {
			item[k] = v
		}
		if c.Validation != "" {
			item[attrValidation] = dynamo.S(c.Validation)
		}
		_, err := d.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           &d.table,
			Item:                                item,
			ConditionExpression:                 aws.String(claimPutCondition),
			ExpressionAttributeNames:            map[string]string{"#st": attrStatus},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":nows": dynamo.N(now.Unix()), ":nowms": dynamo.Millis(now), ":processing": dynamo.S(string(StatusInProgress))},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return Record{Key: key, Status: StatusInProgress, Attempts: 1, LeaseOwner: token, LeaseUntil: c.LeaseUntil.Truncate(time.Millisecond),
			CreatedAt: now.Truncate(time.Millisecond), UpdatedAt: now.Truncate(time.Millisecond),
			ExpiresAt: time.Unix(exp, 0).UTC(), Validation: c.Validation, Version: 1}, err
	}
	fresh, perr := put(now)
	if perr == nil {
		return fresh, true, nil
	}
	for try := 0; ; try++ {
		old, ours, err := d.settle(ctx, "claim", key, perr, now, mine)
		switch {
		case err != nil:
			return Record{}, false, err
		case ours:
			// The claim is ours: a write whose answer was lost. Settled
			// before giving up, so a lost answer on the last try is no
			// conflict.
			return *old, true, nil
		case old != nil && !old.claimable(now, c.MaxAttempts, c.Validation):
			return *old, false, nil
		case try >= claimTries:
			// Still absent-yet-refused or claimable-yet-refused: other
			// claims keep changing the record. Retryable, like throttling.
			return Record{}, false, fmt.Errorf("claim %s: %w: %w (the record kept changing under %d attempts)", key, ErrUnavailable, ErrConflict, claimTries)
		}
		// Each try reads the clock afresh and judges what it finds by the
		// same reading it wrote with.
		now = d.now()
		if old == nil {
			// The condition failed, yet the record is gone or expired by the
			// time it was judged: it changed under us. Put again.
			fresh, perr = put(now)
			if perr == nil {
				return fresh, true, nil
			}
		} else {
			perr = d.takeOver(ctx, key, token, *old, c, now)
			if perr == nil {
				o := *old
				o.Status, o.LeaseOwner, o.LeaseUntil = StatusInProgress, token, c.LeaseUntil.Truncate(time.Millisecond)
				o.Attempts++
				o.UpdatedAt, o.ExpiresAt, o.Version = now.Truncate(time.Millisecond), time.Unix(exp, 0).UTC(), o.Version+1
				o.Result, o.ResultSize, o.StoredSize, o.Unstored = nil, 0, 0, ""
				if c.Validation != "" {
					o.Validation = c.Validation
				}
				return o, true, nil
			}
		}
	}
}

// takeOver moves a lapsed or failed record (exactly as read: same version)
// to in progress under token, counting the attempt.
func (d *dynamoBackend) takeOver(ctx context.Context, key, token string, old Record, c Claim, now time.Time) error {
	set := "#st = :processing, lease_owner = :tok, lease_until = :until, attempts = attempts + :one, " +
		"updated_at = :now, expires_at = :exp, ver = ver + :one"
	vals := map[string]types.AttributeValue{
		":processing": dynamo.S(string(StatusInProgress)), ":tok": dynamo.S(token), ":until": dynamo.Millis(c.LeaseUntil), ":one": dynamo.N(1),
		":now": dynamo.Millis(now), ":exp": dynamo.N(claimExpiry(c)), ":ver": dynamo.N(old.Version), ":nows": dynamo.N(now.Unix()),
	}
	if c.Validation != "" {
		set += ", validation = :val"
		vals[":val"] = dynamo.S(c.Validation)
	}
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &d.table,
		Key:                                 itemKey(key),
		UpdateExpression:                    aws.String("SET " + set + " REMOVE #res, result_enc, result_size, stored_size, unstored"),
		ConditionExpression:                 aws.String("ver = :ver AND expires_at > :nows"),
		ExpressionAttributeNames:            map[string]string{"#st": attrStatus, "#res": attrResult},
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return err
}

// settle decides what a conditional write on key's record that returned
// err did (dynamo.Settle): the record and ours == true when mine recognises
// the caller's own write in it (its answer was lost); otherwise the record
// that refused the write (nil: none, or expired), or an error. Records are
// judged at now, the time the write was made with.
func (d *dynamoBackend) settle(ctx context.Context, op, key string, err error, now time.Time, mine func(Record) bool) (old *Record, ours bool, _ error) {
	return dynamo.Settle(ctx, err, dynamo.Settler[Record]{
		Decode: func(item map[string]types.AttributeValue) (*Record, error) {
			r, err := decodeRecord(item)
			if err != nil || r.Expired(now) {
				return nil, err
			}
			return &r, nil
		},
		Read: func(ctx context.Context) (*Record, error) {
			r, err := d.get(ctx, key, now)
			if errors.Is(err, ErrNotFound) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return &r, nil
		},
		Mine:        mine,
		Unavailable: func(err error) error { return unavailable(op, key, err) },
	})
}

// unavailable translates an SDK error: callers never see SDK error types,
// only ErrUnavailable and the error's text (a context's own errors stay
// matchable).
func unavailable(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: %w: %w", op, key, ErrUnavailable, err)
	}
	return fmt.Errorf("%s %s: %w: %v", op, key, ErrUnavailable, err)
}

// Get implements Backend, with a consistent read.
func (d *dynamoBackend) Get(ctx context.Context, key string) (Record, error) {
	if err := validKey(key); err != nil {
		return Record{}, err
	}
	return d.get(ctx, key, time.Time{})
}

// get is Get judging expiry at now (the clock's reading when now is zero,
// taken after the read).
func (d *dynamoBackend) get(ctx context.Context, key string, now time.Time) (Record, error) {
	out, err := d.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: itemKey(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Record{}, unavailable("get", key, err)
	}
	if out.Item == nil {
		return Record{}, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	r, err := decodeRecord(out.Item)
	if err != nil {
		return Record{}, err
	}
	if now.IsZero() {
		now = d.now()
	}
	if r.Expired(now) {
		return Record{}, fmt.Errorf("get %s: %w (expired)", key, ErrNotFound)
	}
	return r, nil
}

// Complete implements Backend: one UpdateItem, conditioned on token still
// owning the claim.
func (d *dynamoBackend) Complete(ctx context.Context, key, token string, c Completion) (Record, error) {
	if err := validKey(key); err != nil {
		return Record{}, err
	}
	if token == "" {
		return Record{}, fmt.Errorf("%w: empty claim token", ErrInvalid)
	}
	now := d.now()
	if !c.ExpiresAt.After(now) {
		return Record{}, fmt.Errorf("%w: complete %s: expiry must be after now", ErrInvalid, key)
	}
	stored, enc := c.Data, ""
	unstored := c.Unstored
	if unstored == "" && len(c.Data) > MaxResultDecodedBytes {
		// Not compressed: it could be stored, but never read back.
		unstored = fmt.Sprintf("result of %d bytes is over the %d-byte limit of a result before compression", len(c.Data), MaxResultDecodedBytes)
	}
	if unstored == "" {
		if z, ok := dynamo.Shrink(c.Data, compressAbove); ok {
			stored, enc = z, "gzip"
		}
	}
	if unstored == "" && len(stored) > MaxResultBytes {
		unstored = fmt.Sprintf("result of %d bytes (%d stored) is over the %d-byte limit of a DynamoDB item", len(c.Data), len(stored), MaxResultBytes)
	}
	vals := map[string]types.AttributeValue{
		":processing": dynamo.S(string(StatusInProgress)), ":done": dynamo.S(string(StatusCompleted)), ":tok": dynamo.S(token), ":now": dynamo.Millis(now),
		":exp": dynamo.N(c.ExpiresAt.Unix()), ":one": dynamo.N(1), ":size": dynamo.N(int64(len(c.Data))),
	}
	set := []string{"#st = :done", "updated_at = :now", "expires_at = :exp", "ver = ver + :one", "result_size = :size"}
	remove := []string{"lease_until"}
	rec := Record{Key: key, Status: StatusCompleted, LeaseOwner: token, UpdatedAt: now.Truncate(time.Millisecond),
		ExpiresAt: time.Unix(c.ExpiresAt.Unix(), 0).UTC(), ResultSize: len(c.Data)}
	if unstored != "" {
		set = append(set, "unstored = :why", "stored_size = :stored")
		vals[":why"], vals[":stored"] = dynamo.S(trimTo(unstored, maxUnstored)), dynamo.N(int64(len(stored)))
		remove = append(remove, "#res", "result_enc")
		rec.Unstored, rec.StoredSize = trimTo(unstored, maxUnstored), len(stored)
	} else {
		set = append(set, "#res = :res", "stored_size = :stored")
		vals[":res"], vals[":stored"] = &types.AttributeValueMemberB{Value: stored}, dynamo.N(int64(len(stored)))
		if enc != "" {
			set = append(set, "result_enc = :enc")
			vals[":enc"] = dynamo.S(enc)
		} else {
			remove = append(remove, "result_enc")
		}
		rec.Result, rec.StoredSize = c.Data, len(stored)
	}
	err := d.owned(ctx, "complete", key, token, set, remove, vals, StatusCompleted)
	return rec, err
}

// Fail implements Backend: status failed, the error text (trimmed to 256
// bytes; never put secrets in errors), the lease released, in one
// UpdateItem conditioned on token still owning the claim.
func (d *dynamoBackend) Fail(ctx context.Context, key, token, cause string) error {
	if err := validKey(key); err != nil {
		return err
	}
	if token == "" {
		return fmt.Errorf("%w: empty claim token", ErrInvalid)
	}
	now := d.now()
	return d.owned(ctx, "fail", key, token,
		[]string{"#st = :failed", "updated_at = :now", "last_error = :err", "ver = ver + :one"}, []string{"lease_until"},
		map[string]types.AttributeValue{
			":processing": dynamo.S(string(StatusInProgress)), ":failed": dynamo.S(string(StatusFailed)), ":tok": dynamo.S(token), ":now": dynamo.Millis(now),
			":err": dynamo.S(trimTo(cause, maxLastError)), ":one": dynamo.N(1),
		}, StatusFailed)
}

// owned runs a claim holder's write; to is the status it moves to, by
// which a retried write whose answer was lost recognises itself.
func (d *dynamoBackend) owned(ctx context.Context, op, key, token string, set, remove []string, vals map[string]types.AttributeValue, to Status) error {
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	// Only completion mentions the result, which is a reserved word.
	names := map[string]string{"#st": attrStatus}
	if to == StatusCompleted {
		names["#res"] = attrResult
	}
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &d.table,
		Key:                                 itemKey(key),
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String("#st = :processing AND lease_owner = :tok"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil
	}
	mine := func(r Record) bool { return r.LeaseOwner == token && r.Status == to }
	old, ours, err := d.settle(ctx, op, key, err, d.now(), mine)
	switch {
	case err != nil:
		return err
	case ours:
		return nil // our own write, whose answer was lost
	case old == nil:
		return fmt.Errorf("%s %s: %w (record gone or expired)", op, key, ErrLeaseLost)
	}
	return fmt.Errorf("%s %s: %w (now %s, attempt %d)", op, key, ErrLeaseLost, old.Status, old.Attempts)
}

// Forget ends key's window now, so the next claim runs the call afresh
// (Store.Forget). One UpdateItem; ErrNotFound when there is no record.
func (d *dynamoBackend) Forget(ctx context.Context, key string) error {
	if err := validKey(key); err != nil {
		return err
	}
	now := d.now()
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &d.table,
		Key:                       itemKey(key),
		UpdateExpression:          aws.String("SET expires_at = :nows, updated_at = :now, ver = ver + :one"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":nows": dynamo.N(now.Unix()), ":now": dynamo.Millis(now), ":one": dynamo.N(1)},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("forget %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return unavailable("forget", key, err)
	}
	return nil
}

func trimTo(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	return strings.ToValidUTF8(s, "?")
}
