package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// API is the slice of the DynamoDB client the ledger calls: the single-item
// calls, and the reads of many.
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
	// maxPayloadBytes bounds a decompressed payload (Lambda's request limit
	// is 6 MB; a stored payload is at most 400 KB compressed).
	maxPayloadBytes = 8 << 20
	// compressAbove is the payload size from which gzip is tried.
	compressAbove = 512
)

// Options configure a Ledger.
type Options struct {
	// Table is the DynamoDB table name. Required.
	Table string
	// Shards is the number of due-index partitions (default 16). Changing
	// it on a live table only changes where new records go; the reclaimer
	// must query the largest value ever used.
	Shards int
	// Retention is how long records and payloads live (default 7 days;
	// keep it above the longest provider retry window: Stripe retries for
	// up to 3 days).
	Retention time.Duration
	// SourceRetention overrides Retention per source (the receiver fills it
	// from each source's configured or provider-derived retention). The
	// record, its payload and the replay guard's digest all expire together.
	SourceRetention map[string]time.Duration
	// ReclaimAfter is how long a new record may wait in received before the
	// reclaimer looks at it (default 2 minutes). Claims leave due_at alone,
	// so the common path (claim, complete) never rewrites the due index.
	ReclaimAfter time.Duration
	// Now is the clock (default time.Now). Tests inject their own.
	Now func() time.Time
}

// Ledger is the DynamoDB ledger. Safe for concurrent use.
type Ledger struct {
	db  API
	opt Options
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

func (l *Ledger) now() time.Time { return l.opt.Now().UTC() }

// NewEvent is what Create stores.
type NewEvent struct {
	Key
	Type       string
	BodySHA256 string
	// PayloadRef, when set, records that the body is kept outside the
	// ledger (see Record.PayloadRef); no payload item is written for it.
	PayloadRef string
}

// Create claims ev's identity with one conditional put. It reports
// created == true for the first caller; every other caller gets the existing
// record and created == false (a duplicate is a result, not an error).
func (l *Ledger) Create(ctx context.Context, ev NewEvent) (Record, bool, error) {
	pk := ev.PK()
	if err := ev.check(pk); err != nil {
		return Record{}, false, err
	}
	now := l.now()
	rec := Record{
		Key: ev.Key, EventType: ev.Type, Status: Received, CreatedAt: now, UpdatedAt: now,
		ExpiresAt: now.Add(l.retention(ev.Source)).Truncate(time.Second), BodySHA256: ev.BodySHA256,
		DueShard: shardOf(pk, l.opt.Shards), DueAt: now.Add(l.opt.ReclaimAfter), Version: 1, PayloadRef: ev.PayloadRef,
	}
	token := dynamo.NewToken()
	item := map[string]types.AttributeValue{
		attrPK: dynamo.S(pk), attrSK: dynamo.S(skRecord), attrCreator: dynamo.S(token),
		attrSource: dynamo.S(ev.Source), attrTenant: dynamo.S(ev.Tenant), attrKey: dynamo.S(ev.ID),
		attrStatus: dynamo.S(string(Received)), attrAttempts: dynamo.N(0), attrReclaims: dynamo.N(0),
		attrCreated: dynamo.Millis(now), attrUpdated: dynamo.Millis(now), attrExpires: dynamo.N(rec.ExpiresAt.Unix()),
		attrDueShard: dynamo.N(int64(rec.DueShard)), attrDueAt: dynamo.Millis(rec.DueAt), attrVersion: dynamo.N(1),
	}
	if ev.Type != "" {
		item[attrType] = dynamo.S(ev.Type)
	}
	if ev.BodySHA256 != "" {
		item[attrSHA] = dynamo.S(ev.BodySHA256)
	}
	if ev.PayloadRef != "" {
		if len(ev.PayloadRef) > MaxPayloadRef {
			return Record{}, false, fmt.Errorf("%w: payload reference is %d bytes, over %d", ErrInvalid, len(ev.PayloadRef), MaxPayloadRef)
		}
		item[attrPayloadRef] = dynamo.S(ev.PayloadRef)
	}
	_, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           &l.opt.Table,
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk) OR expires_at <= :now"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": dynamo.N(now.Unix())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return rec, true, nil
	}
	old, mine, err := l.settle(ctx, "create", ev.Key, err, func(r Record) bool { return r.creator == token })
	switch {
	case err != nil:
		return Record{}, false, err
	case mine:
		return *old, true, nil // this caller's put, whose answer was lost
	case old == nil:
		// The condition failed but the record is gone or expired by the time we
		// read it back: someone else owns the identity's fate; report a
		// conflict so the caller answers 5xx and the sender retries.
		return Record{}, false, fmt.Errorf("create %s: %w", ev.Key, ErrConflict)
	}
	return *old, false, nil
}

// settle decides what a conditional write on id's record that returned err
// did (dynamo.Settle): the record and mine == true when mine recognises
// the caller's own write in it (its answer was lost); otherwise the record
// that refused the write (nil: none, or expired), or an error. Without the
// read-back of a lost answer, a write that happened would be reported as
// failed, and the caller would leave undone what must follow it (answer,
// enqueue) until a later retry.
func (l *Ledger) settle(ctx context.Context, op string, id Key, err error, mine func(Record) bool) (*Record, bool, error) {
	return dynamo.Settle(ctx, err, dynamo.Settler[Record]{
		Decode: func(item map[string]types.AttributeValue) (*Record, error) {
			if r := decodeRecord(item); !r.Expired(l.now()) {
				return &r, nil
			}
			return nil, nil
		},
		Read: func(ctx context.Context) (*Record, error) {
			r, err := l.Get(ctx, id)
			if errors.Is(err, ErrNotFound) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return &r, nil
		},
		Mine:        mine,
		Unavailable: func(err error) error { return unavailable(op, id, err) },
	})
}

func unavailable(op string, id Key, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: %w: %w", op, id, ErrUnavailable, err)
	}
	return fmt.Errorf("%s %s: %w: %v", op, id, ErrUnavailable, err)
}

// Get reads a record with a consistent read. An expired record is
// ErrNotFound.
func (l *Ledger) Get(ctx context.Context, id Key) (Record, error) {
	if err := id.Validate(); err != nil {
		return Record{}, err
	}
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &l.opt.Table, Key: key(id, skRecord), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Record{}, unavailable("get", id, err)
	}
	if out.Item == nil {
		return Record{}, fmt.Errorf("get %s: %w", id, ErrNotFound)
	}
	r := decodeRecord(out.Item)
	if r.Expired(l.now()) {
		return Record{}, fmt.Errorf("get %s: %w (expired)", id, ErrNotFound)
	}
	return r, nil
}

// PutPayload stores the event's body, compressed when that is smaller, with
// digest, the body digest of the record it is the payload of (see
// PayloadOf). It is written once per event by the receiver that created the
// record (and again, identically, to repair a receiver that died between
// the two writes). It does not read the record: the caller has it, and
// writes only a body whose digest is the record's (the receiver: the
// record it just created, or the one a duplicate with the same digest
// found).
func (l *Ledger) PutPayload(ctx context.Context, id Key, body []byte, digest string) error {
	if err := id.Validate(); err != nil {
		return err
	}
	item := payloadItem(id, body, digest)
	item[attrExpires] = dynamo.N(l.now().Add(l.retention(id.Source)).Unix())
	if _, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &l.opt.Table, Item: item}); err != nil {
		return unavailable("put payload", id, err)
	}
	return nil
}

// payloadItem is id's payload item for body (compressed when that is
// smaller), marked with the record's body digest when there is one; the
// caller adds the expiry.
func payloadItem(id Key, body []byte, digest string) map[string]types.AttributeValue {
	stored, enc := storedBody(body)
	item := key(id, skPayload)
	item[attrBody] = &types.AttributeValueMemberB{Value: stored}
	if enc != "" {
		item[attrEncoding] = dynamo.S(enc)
	}
	if digest != "" {
		item[attrSHA] = dynamo.S(digest)
	}
	return item
}

// Payload reads the event's body back, whichever event under id it was
// written for. ErrNotFound when it was never stored. The pipeline reads a
// record's body with PayloadOf.
func (l *Ledger) Payload(ctx context.Context, id Key) ([]byte, error) {
	item, err := l.payloadItem(ctx, id)
	if err != nil {
		return nil, err
	}
	return decodePayload(id, item)
}

// PayloadOf reads rec's body: its payload item, unless that item was written
// for another event than rec (ofRecord), which is ErrNotFound as a missing
// one is. A key can be used again once its record expired, and DynamoDB's
// TTL deletes the earlier event's payload item days later, if at all by
// then: read by key alone, that body would be re-driven, replayed or run as
// the newer event's.
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

// ofRecord says why a payload item is not rec's body, or "" when it is (as
// far as can be told). An item marked with another body digest than rec's
// was written for an earlier event under the key. So was one that expires
// before rec was created: every write of rec's payload comes after rec and
// lasts at least as long. An unmarked item under a record without a digest
// (both written before digests were kept) is taken as the record's.
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

// update runs one conditional UpdateItem on id's record and returns the
// record as written, from the answer or, when that was lost, as mine
// recognises it (settle). The version increment is added to every write.
// When the condition refused the write, refused is true and old is the
// record that refused it (nil when there is none).
func (l *Ledger) update(ctx context.Context, op string, id Key, p *exprParts, cond string, mine func(Record) bool) (rec Record, old *Record, refused bool, err error) {
	p.vals[":one"] = dynamo.N(1)
	p.set = append(p.set, attrVersion+" = "+attrVersion+" + :one")
	expr := p.String()
	// DynamoDB rejects names and values that the expressions do not use.
	used := expr + " " + cond
	for k := range p.vals {
		if !uses(used, k) {
			delete(p.vals, k)
		}
	}
	for k := range p.names {
		if !uses(used, k) {
			delete(p.names, k)
		}
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                           &l.opt.Table,
		Key:                                 key(id, skRecord),
		UpdateExpression:                    aws.String(expr),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeValues:           p.vals,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if len(p.names) > 0 {
		in.ExpressionAttributeNames = p.names
	}
	out, err := l.db.UpdateItem(ctx, in)
	if err == nil {
		return decodeRecord(out.Attributes), nil, false, nil
	}
	old, ours, err := l.settle(ctx, op, id, err, mine)
	switch {
	case err != nil:
		return Record{}, nil, false, err
	case ours:
		return *old, nil, false, nil
	}
	return Record{}, old, true, nil
}

// parts starts an update: the SET assignments given, the REMOVE paths
// given, the status placeholder #st and the values vals.
func parts(set, remove []string, vals map[string]types.AttributeValue) *exprParts {
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	return &exprParts{set: set, remove: remove, names: map[string]string{"#st": attrStatus}, vals: vals}
}

// uses reports whether expr mentions the placeholder p as a whole token.
func uses(expr, p string) bool {
	for i := 0; ; {
		j := strings.Index(expr[i:], p)
		if j < 0 {
			return false
		}
		end := i + j + len(p)
		if end == len(expr) || !isWord(expr[end]) {
			return true
		}
		i = end
	}
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Lease is a worker's hold on a record: what Claim returns and what every
// write only the holder may make (Extend, SaveSteps, Complete, Fail, Bury)
// takes. It is a value; Extend returns the extended one.
type Lease struct {
	ID    Key
	Token string    // the owner token stored in lease_owner
	Until time.Time // when the lease ends, by the ledger's clock
	// Record is the record as the claim left it (attempts, steps). A holder
	// that sets it to what its later writes returned (SaveSteps) saves Fail
	// a second write; Fail never trusts it blindly.
	Record Record
}

// Claim takes a lease on id for the given duration. It succeeds from
// received, failed, or processing whose lease has expired, and returns the
// lease with the record as claimed: a fresh owner token, attempts
// incremented, the run counted as interrupted until its answer (Complete,
// Fail, Bury) takes that back, and the steps earlier attempts recorded. A received or
// failed record that kept an earlier lease's end (Fail with a step left
// started) is claimed only once that end has passed, like a processing one.
//
// Refusals: ErrNotFound; ErrTerminal when done or dead (the StateError's
// Record says which); ErrLeased when another worker's lease, or the end an
// earlier one left behind, is live.
//
// Claim takes whatever event the record holds; the processor, which claims
// for a message, uses ClaimEvent.
func (l *Ledger) Claim(ctx context.Context, id Key, d time.Duration) (Lease, error) {
	return l.claim(ctx, id, d, nil)
}

// ClaimEvent is Claim for the event with identity ev (a queue message's
// type and body digest): the same one conditional write also requires the
// record to be that event (Record.Mismatch). When it is another, the refusal
// is a StateError with ErrNotThisEvent, whatever else would refuse the
// claim, and the record is left exactly as it was: no attempt counted, no
// status or lease change.
func (l *Ledger) ClaimEvent(ctx context.Context, id Key, d time.Duration, ev Identity) (Lease, error) {
	return l.claim(ctx, id, d, &ev)
}

// identityCond is Record.Mismatch as the start of a condition expression:
// it holds while the record is the event ev names (nil: any), with ev's
// digest and type as :sha and :type. It is "" or ends in " AND ".
func identityCond(ev *Identity) string {
	if ev == nil {
		return ""
	}
	c := "attribute_not_exists(" + attrSHA + ")"
	if ev.BodySHA256 != "" {
		c = "(" + c + " OR " + attrSHA + " = :sha)"
	}
	if ev.Type != "" {
		return c + " AND " + attrType + " = :type AND "
	}
	return c + " AND attribute_not_exists(" + attrType + ") AND "
}

func (l *Ledger) claim(ctx context.Context, id Key, d time.Duration, ev *Identity) (Lease, error) {
	if err := id.Validate(); err != nil {
		return Lease{}, err
	}
	if d <= 0 {
		return Lease{}, fmt.Errorf("%w: lease %v must be positive", ErrInvalid, d)
	}
	now := l.now()
	token := dynamo.NewToken()
	var want Identity
	if ev != nil {
		want = *ev
	}
	rec, old, refused, err := l.update(ctx, "claim", id,
		parts([]string{"#st = :processing", "lease_owner = :tok", "lease_until = :until", "attempts = attempts + :one", interruptedUp, "updated_at = :now"}, nil,
			map[string]types.AttributeValue{
				":processing": dynamo.S(string(Processing)), ":received": dynamo.S(string(Received)), ":failed": dynamo.S(string(Failed)),
				":tok": dynamo.S(token), ":until": dynamo.Millis(now.Add(d)), ":now": dynamo.Millis(now), ":nows": dynamo.N(now.Unix()), ":zero": dynamo.N(0),
				":sha": dynamo.S(want.BodySHA256), ":type": dynamo.S(want.Type), // identityCond's; dropped when unused
			}),
		"attribute_exists(pk) AND expires_at > :nows AND "+identityCond(ev)+"("+
			"(#st IN (:received, :failed) AND (attribute_not_exists(lease_until) OR lease_until <= :now)) OR "+
			"(#st = :processing AND lease_until <= :now))",
		func(r Record) bool { return r.Status == Processing && r.LeaseOwner == token })
	if err != nil {
		return Lease{}, err
	}
	if !refused {
		return Lease{ID: id, Token: token, Until: rec.LeaseUntil, Record: rec}, nil
	}
	if old != nil && ev != nil && old.Mismatch(*ev) != "" {
		return Lease{}, &StateError{Op: "claim", Err: ErrNotThisEvent, Record: *old}
	}
	return Lease{}, l.refusal("claim", id, old, now)
}

// refusal classifies why a claim-like write was refused.
func (l *Ledger) refusal(op string, id Key, old *Record, now time.Time) error {
	switch {
	case old == nil:
		return fmt.Errorf("%s %s: %w", op, id, ErrNotFound)
	case old.Status.Terminal():
		return &StateError{Op: op, Err: ErrTerminal, Record: *old}
	case old.LeaseLive(now):
		return &StateError{Op: op, Err: ErrLeased, Record: *old}
	default:
		return &StateError{Op: op, Err: ErrConflict, Record: *old}
	}
}

// ownerCond holds while the lease's token owns a live lease on a processing
// record.
const ownerCond = "#st = :processing AND lease_owner = :tok AND lease_until > :now"

// The run counters. A claim counts its run as interrupted in advance and
// the run's answer (Complete, Fail, Bury) takes the count back, so a run
// that never answers (the worker crashed, timed out or lost its lease, an
// AWS call failed it) stays counted without anyone having to notice it.
// The counters of records written before they existed start at zero.
const (
	interruptedUp   = attrInterrupts + " = if_not_exists(" + attrInterrupts + ", :zero) + :one"
	interruptedDown = attrInterrupts + " = if_not_exists(" + attrInterrupts + ", :zero) - :one"
	failuresUp      = attrFailures + " = if_not_exists(" + attrFailures + ", :zero) + :one"
	givenBackUp     = attrGivenBack + " = if_not_exists(" + attrGivenBack + ", :zero) + :one"
)

// owned runs a lease holder's write: p plus the step changes, conditioned on
// the lease and on extra, when given.
func (l *Ledger) owned(ctx context.Context, op string, lease Lease, p *exprParts, changes []StepChange, extra string) (Record, error) {
	if err := lease.ID.Validate(); err != nil {
		return Record{}, err
	}
	if lease.Token == "" {
		return Record{}, fmt.Errorf("%w: empty lease token", ErrInvalid)
	}
	now := l.now()
	if err := p.addSteps(changes, now); err != nil {
		return Record{}, err
	}
	p.vals[":processing"] = dynamo.S(string(Processing))
	p.vals[":tok"] = dynamo.S(lease.Token)
	p.vals[":now"] = dynamo.Millis(now)
	p.vals[":zero"] = dynamo.N(0)
	// A final write (the record leaves processing and the lease with it)
	// signs itself with the lease token, so that the SDK's retry of a write
	// whose answer was lost recognises it instead of finding the lease gone.
	final := finalStatus[op]
	if final != "" {
		p.set = append(p.set, attrWriter+" = :tok")
	}
	mine := func(r Record) bool { return final != "" && r.Status == final && r.writer == lease.Token }
	cond := ownerCond
	if extra != "" {
		cond += " AND " + extra
	}
	rec, old, refused, err := l.update(ctx, op, lease.ID, p, cond, mine)
	if err != nil || !refused {
		return rec, err
	}
	if old == nil {
		return Record{}, fmt.Errorf("%s %s: %w", op, lease.ID, ErrNotFound)
	}
	return Record{}, &StateError{Op: op, Err: ErrLeaseLost, Record: *old}
}

// finalStatus is the status each final lease-holder write leaves.
var finalStatus = map[string]Status{"complete": Done, "fail": Failed, "release": Failed, "bury": Dead}

// SaveSteps records step changes while the lease is held: one UpdateItem of
// one write unit. The processor calls it between steps (to record the last
// step done before the next one starts, or to mark an at-most-once step
// started before its effect runs); the last step's completion rides on
// Complete instead. ErrLeaseLost when the lease is no longer held.
func (l *Ledger) SaveSteps(ctx context.Context, lease Lease, changes ...StepChange) (Record, error) {
	if len(changes) == 0 {
		return Record{}, fmt.Errorf("%w: no step changes to save", ErrInvalid)
	}
	return l.owned(ctx, "save steps", lease, parts([]string{"updated_at = :now"}, nil, nil), changes, "")
}

// Complete marks a leased record done and records the given step changes
// in the same write. ErrLeaseLost when the lease is no longer held.
//
// The record keeps its due-index entry: removing it would be a second
// write to the index (a delete costs a write unit like the put that made
// it), while the reclaimer reads the entry once, when it falls due, at the
// eighth of that price (an eventually consistent read; see Peek), and
// passes it. The entry goes with the record when TTL deletes it, at no
// charge.
func (l *Ledger) Complete(ctx context.Context, lease Lease, changes ...StepChange) (Record, error) {
	return l.owned(ctx, "complete", lease,
		parts([]string{"#st = :done", interruptedDown, "updated_at = :now"}, []string{"lease_owner", "lease_until"},
			map[string]types.AttributeValue{":done": dynamo.S(string(Done))}), changes, "")
}

// Fail records a retryable failure of the handler: status failed,
// failures+1 (and the run's interrupted count, which its claim added, taken
// back: the run did answer), the error text (trimmed to 1 KB of the caller's choosing; never put secrets
// in it), the step changes, and a due time retryAfter from now when the
// reclaimer re-drives it if SQS has not.
//
// A Fail that leaves a step started and not done (an at-most-once step
// whose request failed on our side, say a client timeout) keeps the
// lease's end (lease_until) on the record, and due_at no earlier: the
// downstream may still apply that request until the lease ends, and a
// retry that asked the step's check before then could be told "not done"
// and send it again. Claim refuses the record until then. Any other Fail
// clears the lease, so an ordinary retry need not wait.
//
// Which steps are started is judged from lease.Record with the changes
// applied. Clearing the lease on that judgement is conditioned on the
// record's version being lease.Record's, so a stale lease.Record (steps
// saved since the claim) costs a second write judged from the record as
// stored, never a cleared lease over a started step.
func (l *Ledger) Fail(ctx context.Context, lease Lease, cause string, retryAfter time.Duration, changes ...StepChange) (Record, error) {
	return l.fail(ctx, "fail", lease, cause, retryAfter, changes)
}

// Release gives a leased record back after a run that the infrastructure,
// not the handler, cut short (the body could not be read from the ledger or
// the payload store, or the event's resource stayed busy) before the
// handler ran: like Fail, but the run stays counted as interrupted, and as
// given back (Record.GivenBack), and no failure is counted, so the event's
// MaxAttempts is not spent on trouble its handler never saw.
func (l *Ledger) Release(ctx context.Context, lease Lease, cause string, retryAfter time.Duration, changes ...StepChange) (Record, error) {
	return l.fail(ctx, "release", lease, cause, retryAfter, changes)
}

// fail is Fail (op "fail", the handler's failure) and Release (op
// "release").
func (l *Ledger) fail(ctx context.Context, op string, lease Lease, cause string, retryAfter time.Duration, changes []StepChange) (Record, error) {
	set := []string{"#st = :failed", "updated_at = :now", "last_error = :err", "due_shard = :shard", "due_at = :due"}
	if op == "fail" {
		set = append(set, failuresUp, interruptedDown)
	} else {
		set = append(set, givenBackUp) // still interrupted, and before the handler
	}
	for try := 0; ; try++ {
		now := l.now()
		// After two stale judgements (a reclaimer's Postpone can move the
		// version too) keep the lease: waiting for it is always safe.
		keep := try == 2 || leavesStarted(lease.Record.Steps, changes)
		due := now.Add(max(retryAfter, 0)) // never before the write (see notBefore)
		remove := []string{"lease_owner", "lease_until"}
		guard := ""
		if keep {
			remove = remove[:1]
			if due.Before(lease.Until) {
				due = lease.Until // the reclaimer has nothing to do before
			}
		} else {
			guard = "ver = :seen"
		}
		rec, err := l.owned(ctx, op, lease,
			parts(append([]string(nil), set...), remove,
				map[string]types.AttributeValue{
					":failed": dynamo.S(string(Failed)), ":err": dynamo.S(trim(cause)), ":seen": dynamo.N(lease.Record.Version),
					":shard": dynamo.N(int64(shardOf(lease.ID.PK(), l.opt.Shards))), ":due": dynamo.Millis(due),
				}), changes, guard)
		var se *StateError
		if guard != "" && errors.As(err, &se) && errors.Is(err, ErrLeaseLost) &&
			se.Record.Status == Processing && se.Record.LeaseOwner == lease.Token && se.Record.LeaseUntil.After(now) {
			// Only the guard failed: the lease is still ours, but the
			// record moved on since lease.Record. Judge again from it.
			lease.Record = se.Record
			continue
		}
		return rec, err
	}
}

// leavesStarted reports whether a step is started and not done once changes
// (the last per name wins, as in addSteps) apply to steps.
func leavesStarted(steps map[string]Step, changes []StepChange) bool {
	after := make(map[string]StepStatus, len(steps)+len(changes))
	for name, st := range steps {
		after[name] = st.Status
	}
	for _, c := range changes {
		after[c.Name] = c.Status
	}
	for _, st := range after {
		if st == StepStarted {
			return true
		}
	}
	return false
}

// Bury marks a leased record dead (a permanent error, attempts exhausted,
// a step that cannot be proven), with the step changes in the same write:
// the run's answer, like Complete and Fail, and a failure counted, like
// Fail's. Dead records are alarmed and replayable (Replay).
//
// Like Fail, a Bury that leaves a step started keeps the lease's end: the
// record is dead, so nothing claims it, but an operator's replay right
// after must still wait for that end before the step's check is asked.
func (l *Ledger) Bury(ctx context.Context, lease Lease, cause string, changes ...StepChange) (Record, error) {
	remove := []string{"lease_owner", "lease_until", "due_shard", "due_at"}
	if leavesStarted(lease.Record.Steps, changes) {
		remove = []string{"lease_owner", "due_shard", "due_at"}
	}
	return l.owned(ctx, "bury", lease,
		parts([]string{"#st = :dead", failuresUp, interruptedDown, "updated_at = :now", "last_error = :err"}, remove,
			map[string]types.AttributeValue{":dead": dynamo.S(string(Dead)), ":err": dynamo.S(trim(cause))}), changes, "")
}

// Extend keeps a live lease for at least d more from now, for handlers that
// run long, and returns the extended lease. The lease never moves earlier:
// its end becomes the later of now+d and lease.Until (the holder's own end;
// only the holder moves it while the lease lives), in the one conditional
// write. An earlier end would let the reclaimer or another worker take the
// event from a worker still running it.
func (l *Ledger) Extend(ctx context.Context, lease Lease, d time.Duration) (Lease, error) {
	if d <= 0 {
		return Lease{}, fmt.Errorf("%w: lease %v must be positive", ErrInvalid, d)
	}
	until := l.now().Add(d)
	if lease.Until.After(until) {
		until = lease.Until
	}
	rec, err := l.owned(ctx, "extend", lease,
		parts([]string{"lease_until = :until", "updated_at = :now"}, nil, map[string]types.AttributeValue{":until": dynamo.Millis(until)}), nil, "")
	if err != nil {
		return Lease{}, err
	}
	lease.Until, lease.Record = rec.LeaseUntil, rec
	return lease, nil
}

func trim(s string) string {
	const max = 1024
	if len(s) > max {
		s = s[:max]
	}
	return strings.ToValidUTF8(s, "?")
}
