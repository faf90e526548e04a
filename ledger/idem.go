package ledger

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
	"github.com/hookledger/hookledger/internal/zip"
)

// Call records are the memo of one idempotent function call (package
// idempotency builds on them). They share the ledger's table and its
// attribute names but never its key space or its due index:
//
//   - pk is "idem#" followed by the caller's key (package idempotency uses
//     "operation#sha256-hex"); event records start "ev#", so the two never
//     meet. sk is "idem" (event records use "r" and "p"), so List, Counts and
//     the operator CLI, which select sk "r", never see a call record.
//   - A call record never carries due_shard or due_at: no reclaimer can
//     re-run a synchronous call (its caller is gone), recovery is the
//     caller's retry once the lease ends, and staying off the index keeps
//     every write at table units only.
//
// States reuse the event vocabulary: processing (a caller holds the lease),
// done (the result is stored) and failed (the call returned an error; the
// next claim runs it again, counting attempts).
const (
	callPrefix        = "idem#"
	skCall            = "idem"
	attrValidation    = "validation"
	attrResult        = "result"
	attrResultEnc     = "result_enc"
	attrResultSize    = "result_size"
	attrStoredSize    = "stored_size"
	attrUnstored      = "unstored"
	callCompressAbove = 512
	callMaxError      = 256
	callClaimTries    = 3
)

// MaxCallKey bounds a call key, far below DynamoDB's 2048-byte partition
// key limit.
const MaxCallKey = 1024

// MaxCallResult is the largest result a call record stores, after
// compression: DynamoDB's 400 KB item limit less 4 KB kept for the record's
// own attributes (key, status, lease, counters, validation hash, error).
const MaxCallResult = 400*1024 - 4*1024

// MaxCallResultDecoded is the largest result a call record stores before
// compression: reading a record decompresses at most this much (a bound
// against decompression bombs), so a larger result, however well it
// compresses, could be stored but never read back. CompleteCall records it
// as unstored instead.
const MaxCallResultDecoded = maxPayloadBytes

// ErrCorrupt: a stored call record cannot be read back (a result that does
// not decompress, or decompresses past MaxCallResultDecoded: written by a
// version without that limit, or damaged). Not retryable: the record stays
// unreadable until its window ends or ForgetCall.
var ErrCorrupt = errors.New("ledger: stored call record does not decode")

// Call is a call record as stored.
type Call struct {
	Key        string    `json:"key"`
	Status     Status    `json:"status"`               // Processing, Done or Failed
	Attempts   int       `json:"attempts"`             // claims that ran the call, this window
	LeaseOwner string    `json:"lease_owner"`          // the token of the last claim
	LeaseUntil time.Time `json:"lease_until,omitzero"` // while processing
	CreatedAt  time.Time `json:"created_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	Validation string    `json:"validation,omitempty"` // digest of the validated payload
	Result     []byte    `json:"-"`                    // the stored result, decompressed (done only)
	ResultSize int       `json:"result_size,omitempty"`
	StoredSize int       `json:"stored_size,omitempty"` // after compression
	// Unstored says why a done call has no result: the result could not be
	// stored (too large, or it did not encode). The call ran once anyway.
	Unstored  string `json:"unstored,omitempty"`
	LastError string `json:"last_error,omitempty"`
	Version   int64  `json:"version"`
}

// Expired reports whether the call's window has passed at now. A call in
// progress under a live lease is never expired, whatever its expires_at
// says: its holder is still running it, and a claim that treated it as
// absent would run the call a second time beside it. (Claims set
// expires_at no earlier than the lease end, so this matters for records
// written before they did, and for the last second that expires_at, kept
// in whole seconds for TTL, could otherwise cut off.)
func (c Call) Expired(now time.Time) bool {
	return !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt) && !c.leaseLive(now)
}

func (c Call) leaseLive(now time.Time) bool {
	return c.Status == Processing && now.Before(c.LeaseUntil)
}

// claimExpiry is the expires_at (whole seconds, as TTL reads it) a claim
// writes: the requested window, but never before the lease ends, so that
// neither a new claim nor TTL can remove a record whose holder is still
// running. Completion then sets the real window.
func claimExpiry(c CallClaim) int64 {
	exp := c.ExpiresAt.Unix()
	lease := c.LeaseUntil.Unix()
	if c.LeaseUntil.After(time.Unix(lease, 0)) {
		lease++ // round the lease end up to the second
	}
	return max(exp, lease)
}

// The condition under which a claim's put may replace what is stored: no
// record, or one whose window has passed and that no live lease holds (see
// Call.Expired; the two must agree). :nows is now in seconds, :nowms in
// milliseconds, both from one clock reading.
const callPutCondition = "attribute_not_exists(pk) OR (expires_at <= :nows AND (#st <> :processing OR lease_until <= :nowms))"

// CallClaim is what ClaimCall writes.
type CallClaim struct {
	LeaseUntil  time.Time // when the claim lapses if the caller never finishes; after now
	ExpiresAt   time.Time // when the record's window ends; after now
	Validation  string    // optional digest stored for later payload checks
	MaxAttempts int       // a failed call with this many attempts is not run again; 0 = no limit
}

func validCallKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("%w: call key is empty", ErrInvalid)
	case len(k) > MaxCallKey:
		return fmt.Errorf("%w: call key is %d bytes, over %d", ErrInvalid, len(k), MaxCallKey)
	case !utf8.ValidString(k):
		return fmt.Errorf("%w: call key is not valid UTF-8", ErrInvalid)
	}
	return nil
}

func callKey(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: s(callPrefix + k), attrSK: s(skCall)}
}

func decodeCall(item map[string]types.AttributeValue) (Call, error) {
	c := Call{
		Key:        strings.TrimPrefix(getS(item, attrPK), callPrefix),
		Status:     Status(getS(item, attrStatus)),
		Attempts:   int(getN(item, attrAttempts)),
		LeaseOwner: getS(item, attrOwner),
		LeaseUntil: getMS(item, attrLeaseUntil),
		CreatedAt:  getMS(item, attrCreated),
		UpdatedAt:  getMS(item, attrUpdated),
		Validation: getS(item, attrValidation),
		ResultSize: int(getN(item, attrResultSize)),
		StoredSize: int(getN(item, attrStoredSize)),
		Unstored:   getS(item, attrUnstored),
		LastError:  getS(item, attrLastError),
		Version:    getN(item, attrVersion),
	}
	if e := getN(item, attrExpires); e != 0 {
		c.ExpiresAt = time.Unix(e, 0).UTC()
	}
	if b, ok := item[attrResult].(*types.AttributeValueMemberB); ok {
		c.Result = b.Value
		if getS(item, attrResultEnc) == "gzip" {
			r, err := zip.Decompress(b.Value, MaxCallResultDecoded)
			if err != nil {
				return c, fmt.Errorf("call %s: %w: gzip result: %w (forget the key or wait for its window to end)", c.Key, ErrCorrupt, err)
			}
			c.Result = r
		}
	}
	return c, nil
}

// claimable reports whether an existing, unexpired call may be taken over
// by a claim with validation digest v: a processing call whose lease has
// lapsed (its caller crashed or timed out), or a failed call with attempts
// left, and in both cases only for the payload the key was first used
// with. A claim whose digest differs from the stored one is refused (the
// caller reports a payload mismatch) rather than running another payload
// under the key, which would turn the original client's retry into a
// mismatch.
func (c Call) claimable(now time.Time, maxAttempts int, v string) bool {
	if v != "" && c.Validation != "" && v != c.Validation {
		return false
	}
	switch c.Status {
	case Processing:
		return !now.Before(c.LeaseUntil)
	case Failed:
		return maxAttempts <= 0 || c.Attempts < maxAttempts
	}
	return false
}

// ClaimCall claims key for one run of the call. claimed reports whether the
// caller now holds the lease (the returned Call's LeaseOwner is its token);
// otherwise the Call is the record that stands in the way: done (replay its
// result), processing under a live lease, or failed with no attempts left.
//
// The record's expires_at is c.ExpiresAt but never before c.LeaseUntil
// (rounded up to the second), and a record in progress under a live lease
// is never replaced, even past its expires_at (see Call.Expired). A lapsed
// or failed call whose validation digest differs from c.Validation (both
// set) is not taken over: it is returned, for the caller to report a
// payload mismatch.
//
// Costs: a new key (or one whose window expired) is one conditional
// PutItem; a repeat is that one failed put, which returns the stored record
// (ALL_OLD), so no read follows. Taking over a lapsed lease or a failed
// call adds one conditional UpdateItem that counts the attempt. If other
// claims keep changing the record through 3 retries, the error matches
// ErrUnavailable (retryable) and ErrConflict.
func (l *Ledger) ClaimCall(ctx context.Context, key string, c CallClaim) (call Call, claimed bool, err error) {
	if err := validCallKey(key); err != nil {
		return Call{}, false, err
	}
	now := l.now()
	if !c.LeaseUntil.After(now) || !c.ExpiresAt.After(now) {
		return Call{}, false, fmt.Errorf("%w: claim of %s: lease end and expiry must be after now", ErrInvalid, key)
	}
	token := newToken()
	exp := claimExpiry(c)
	mine := func(o Call) bool { return o.LeaseOwner == token && o.Status == Processing }
	// put claims an absent or expired record, judging expiry at now (the
	// same reading for the condition and for the record it returns).
	put := func(now time.Time) (Call, error) {
		item := callKey(key)
		for k, v := range map[string]types.AttributeValue{
			attrStatus: s(string(Processing)), attrOwner: s(token), attrLeaseUntil: ms(c.LeaseUntil),
			attrAttempts: n(1), attrCreated: ms(now), attrUpdated: ms(now),
			attrExpires: n(exp), attrVersion: n(1),
		} {
			item[k] = v
		}
		if c.Validation != "" {
			item[attrValidation] = s(c.Validation)
		}
		_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           &l.opt.Table,
			Item:                                item,
			ConditionExpression:                 aws.String(callPutCondition),
			ExpressionAttributeNames:            map[string]string{"#st": attrStatus},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":nows": n(now.Unix()), ":nowms": ms(now), ":processing": s(string(Processing))},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return Call{Key: key, Status: Processing, Attempts: 1, LeaseOwner: token, LeaseUntil: c.LeaseUntil.Truncate(time.Millisecond),
			CreatedAt: now.Truncate(time.Millisecond), UpdatedAt: now.Truncate(time.Millisecond),
			ExpiresAt: time.Unix(exp, 0).UTC(), Validation: c.Validation, Version: 1}, err
	}
	fresh, perr := put(now)
	if perr == nil {
		return fresh, true, nil
	}
	old, failed, err := l.callConditionFailure(ctx, "claim call", key, perr, now)
	for try := 0; ; try++ {
		if !failed {
			if o, ok := l.callReadBack(ctx, key, err, mine); ok {
				return o, true, nil
			}
			return Call{}, false, err
		}
		switch {
		case old != nil && mine(*old):
			// The SDK retried a write whose first attempt succeeded but
			// whose answer was lost: the claim is ours. Checked before
			// giving up, so a lost answer on the last try is no conflict.
			return *old, true, nil
		case old != nil && !old.claimable(now, c.MaxAttempts, c.Validation):
			return *old, false, nil
		case try >= callClaimTries:
			// Still absent-yet-refused or claimable-yet-refused: other
			// claims keep changing the record. Retryable, like throttling.
			return Call{}, false, fmt.Errorf("claim call %s: %w: %w (the record kept changing under %d attempts)", key, ErrUnavailable, ErrConflict, callClaimTries)
		}
		// Each try reads the clock afresh and judges what it finds by the
		// same reading it wrote with.
		now = l.now()
		if old == nil {
			// The condition failed, yet the record is gone or expired by the
			// time it was judged: it changed under us. Put again.
			fresh, perr = put(now)
			if perr == nil {
				return fresh, true, nil
			}
		} else {
			perr = l.takeOver(ctx, key, token, *old, c, now)
			if perr == nil {
				o := *old
				o.Status, o.LeaseOwner, o.LeaseUntil = Processing, token, c.LeaseUntil.Truncate(time.Millisecond)
				o.Attempts++
				o.UpdatedAt, o.ExpiresAt, o.Version = now.Truncate(time.Millisecond), time.Unix(exp, 0).UTC(), o.Version+1
				o.Result, o.ResultSize, o.StoredSize, o.Unstored = nil, 0, 0, ""
				if c.Validation != "" {
					o.Validation = c.Validation
				}
				return o, true, nil
			}
		}
		old, failed, err = l.callConditionFailure(ctx, "claim call", key, perr, now)
	}
}

// takeOver moves a lapsed or failed call (exactly as read: same version) to
// processing under token, counting the attempt.
func (l *Ledger) takeOver(ctx context.Context, key, token string, old Call, c CallClaim, now time.Time) error {
	set := "#st = :processing, lease_owner = :tok, lease_until = :until, attempts = attempts + :one, " +
		"updated_at = :now, expires_at = :exp, ver = ver + :one"
	vals := map[string]types.AttributeValue{
		":processing": s(string(Processing)), ":tok": s(token), ":until": ms(c.LeaseUntil), ":one": n(1),
		":now": ms(now), ":exp": n(claimExpiry(c)), ":ver": n(old.Version), ":nows": n(now.Unix()),
	}
	if c.Validation != "" {
		set += ", validation = :val"
		vals[":val"] = s(c.Validation)
	}
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &l.opt.Table,
		Key:                                 callKey(key),
		UpdateExpression:                    aws.String("SET " + set + " REMOVE #res, result_enc, result_size, stored_size, unstored"),
		ConditionExpression:                 aws.String("ver = :ver AND expires_at > :nows"),
		ExpressionAttributeNames:            map[string]string{"#st": attrStatus, "#res": attrResult},
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return err
}

// callConditionFailure is conditionFailure for call records. It judges
// the record it finds at now, the time the refused write was made with.
func (l *Ledger) callConditionFailure(ctx context.Context, op, key string, err error, now time.Time) (old *Call, failed bool, _ error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false, callUnavailable(op, key, err)
	}
	if ccf.Item != nil {
		c, derr := decodeCall(ccf.Item)
		if derr != nil {
			return nil, false, derr
		}
		if c.Expired(now) {
			return nil, true, nil
		}
		return &c, true, nil
	}
	c, gerr := l.getCall(ctx, key, now)
	if errors.Is(gerr, ErrNotFound) {
		return nil, true, nil
	}
	if gerr != nil {
		return nil, false, gerr
	}
	return &c, true, nil
}

// callReadBack settles a write whose answer was lost (see readBack).
func (l *Ledger) callReadBack(ctx context.Context, key string, err error, mine func(Call) bool) (Call, bool) {
	if !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
		return Call{}, false
	}
	c, gerr := l.GetCall(ctx, key)
	if gerr != nil || !mine(c) {
		return Call{}, false
	}
	return c, true
}

func callUnavailable(op, key string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: %w: %w", op, key, ErrUnavailable, err)
	}
	return fmt.Errorf("%s %s: %w: %v", op, key, ErrUnavailable, err)
}

// GetCall reads a call record with a consistent read. An absent or expired
// record is ErrNotFound.
func (l *Ledger) GetCall(ctx context.Context, key string) (Call, error) {
	if err := validCallKey(key); err != nil {
		return Call{}, err
	}
	return l.getCall(ctx, key, time.Time{})
}

// getCall is GetCall judging expiry at now (the clock's reading when now
// is zero, taken after the read).
func (l *Ledger) getCall(ctx context.Context, key string, now time.Time) (Call, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &l.opt.Table, Key: callKey(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Call{}, callUnavailable("get call", key, err)
	}
	if out.Item == nil {
		return Call{}, fmt.Errorf("get call %s: %w", key, ErrNotFound)
	}
	c, err := decodeCall(out.Item)
	if err != nil {
		return Call{}, err
	}
	if now.IsZero() {
		now = l.now()
	}
	if c.Expired(now) {
		return Call{}, fmt.Errorf("get call %s: %w (expired)", key, ErrNotFound)
	}
	return c, nil
}

// CallResult is what CompleteCall stores.
type CallResult struct {
	// Data is the encoded result. It is gzip-compressed when that is
	// smaller (from 512 bytes), so a 3 KB JSON result usually still costs
	// one write unit.
	Data []byte
	// Unstored, when not empty, stores no data and records why (say, the
	// result did not encode). Data too large to store (over MaxCallResult
	// after compression) is recorded the same way by CompleteCall itself.
	Unstored string
	// ExpiresAt restarts the record's window from completion.
	ExpiresAt time.Time
}

// CompleteCall stores a claimed call's result and marks it done: one
// UpdateItem, conditioned on token still owning the claim. ErrLeaseLost
// when another caller has taken the call over (its lease lapsed first).
//
// A result too large for an item is not an error here: the call is marked
// done without data and the returned Call's Unstored says why, so that
// repeats see that the call ran rather than running it again.
func (l *Ledger) CompleteCall(ctx context.Context, key, token string, r CallResult) (Call, error) {
	if err := validCallKey(key); err != nil {
		return Call{}, err
	}
	if token == "" {
		return Call{}, fmt.Errorf("%w: empty claim token", ErrInvalid)
	}
	now := l.now()
	if !r.ExpiresAt.After(now) {
		return Call{}, fmt.Errorf("%w: complete call %s: expiry must be after now", ErrInvalid, key)
	}
	stored, enc := r.Data, ""
	unstored := r.Unstored
	if unstored == "" && len(r.Data) > MaxCallResultDecoded {
		// Not compressed: it could be stored, but never read back.
		unstored = fmt.Sprintf("result of %d bytes is over the %d-byte limit of a result before compression", len(r.Data), MaxCallResultDecoded)
	}
	if unstored == "" && len(r.Data) >= callCompressAbove {
		if z := zip.Compress(r.Data); len(z) < len(r.Data) {
			stored, enc = z, "gzip"
		}
	}
	if unstored == "" && len(stored) > MaxCallResult {
		unstored = fmt.Sprintf("result of %d bytes (%d stored) is over the %d-byte limit of a DynamoDB item", len(r.Data), len(stored), MaxCallResult)
	}
	vals := map[string]types.AttributeValue{
		":processing": s(string(Processing)), ":done": s(string(Done)), ":tok": s(token), ":now": ms(now),
		":exp": n(r.ExpiresAt.Unix()), ":one": n(1), ":size": n(int64(len(r.Data))),
	}
	set := []string{"#st = :done", "updated_at = :now", "expires_at = :exp", "ver = ver + :one", "result_size = :size"}
	remove := []string{"lease_until"}
	call := Call{Key: key, Status: Done, LeaseOwner: token, UpdatedAt: now.Truncate(time.Millisecond),
		ExpiresAt: time.Unix(r.ExpiresAt.Unix(), 0).UTC(), ResultSize: len(r.Data)}
	if unstored != "" {
		set = append(set, "unstored = :why", "stored_size = :stored")
		vals[":why"], vals[":stored"] = s(trimTo(unstored, 512)), n(int64(len(stored)))
		remove = append(remove, "#res", "result_enc")
		call.Unstored, call.StoredSize = trimTo(unstored, 512), len(stored)
	} else {
		set = append(set, "#res = :res", "stored_size = :stored")
		vals[":res"], vals[":stored"] = &types.AttributeValueMemberB{Value: stored}, n(int64(len(stored)))
		if enc != "" {
			set = append(set, "result_enc = :enc")
			vals[":enc"] = s(enc)
		} else {
			remove = append(remove, "result_enc")
		}
		call.Result, call.StoredSize = r.Data, len(stored)
	}
	err := l.callOwned(ctx, "complete call", key, token, set, remove, vals, Done)
	return call, err
}

// FailCall records that a claimed call returned an error: status failed,
// the error text (trimmed to 256 bytes; never put secrets in errors), the
// lease released. The next claim runs the call again, counting the attempt.
// ErrLeaseLost when another caller has taken the call over.
func (l *Ledger) FailCall(ctx context.Context, key, token, cause string) error {
	if err := validCallKey(key); err != nil {
		return err
	}
	if token == "" {
		return fmt.Errorf("%w: empty claim token", ErrInvalid)
	}
	now := l.now()
	return l.callOwned(ctx, "fail call", key, token,
		[]string{"#st = :failed", "updated_at = :now", "last_error = :err", "ver = ver + :one"}, []string{"lease_until"},
		map[string]types.AttributeValue{
			":processing": s(string(Processing)), ":failed": s(string(Failed)), ":tok": s(token), ":now": ms(now),
			":err": s(trimTo(cause, callMaxError)), ":one": n(1),
		}, Failed)
}

// callOwned runs a claim holder's write; to is the status it moves to, by
// which a retried write whose answer was lost recognises itself.
func (l *Ledger) callOwned(ctx context.Context, op, key, token string, set, remove []string, vals map[string]types.AttributeValue, to Status) error {
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	names := map[string]string{"#st": attrStatus}
	if uses(expr, "#res") {
		names["#res"] = attrResult
	}
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &l.opt.Table,
		Key:                                 callKey(key),
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String("#st = :processing AND lease_owner = :tok"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil
	}
	mine := func(c Call) bool { return c.LeaseOwner == token && c.Status == to }
	old, failed, err := l.callConditionFailure(ctx, op, key, err, l.now())
	if !failed {
		if _, ok := l.callReadBack(ctx, key, err, mine); ok {
			return nil
		}
		return err
	}
	if old != nil && mine(*old) {
		return nil // our own write, retried after its answer was lost
	}
	if old == nil {
		return fmt.Errorf("%s %s: %w (record gone or expired)", op, key, ErrLeaseLost)
	}
	return fmt.Errorf("%s %s: %w (now %s, attempt %d)", op, key, ErrLeaseLost, old.Status, old.Attempts)
}

// ForgetCall ends key's window now, so the next claim runs the call afresh
// (for operators: a result that should not be replayed any more). One
// UpdateItem; ErrNotFound when there is no such record.
func (l *Ledger) ForgetCall(ctx context.Context, key string) error {
	if err := validCallKey(key); err != nil {
		return err
	}
	now := l.now()
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &l.opt.Table,
		Key:                       callKey(key),
		UpdateExpression:          aws.String("SET expires_at = :nows, updated_at = :now, ver = ver + :one"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":nows": n(now.Unix()), ":now": ms(now), ":one": n(1)},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("forget call %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return callUnavailable("forget call", key, err)
	}
	return nil
}

func trimTo(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	return strings.ToValidUTF8(s, "?")
}
