package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
	"github.com/hookledger/hookledger/version"
)

// Ledger is the DynamoDB ledger. Safe for concurrent use.
type Ledger struct {
	db  API
	opt Options
}

func (l *Ledger) now() time.Time { return l.opt.Now().UTC() }

// NewEvent is what Create stores.
type NewEvent struct {
	Key
	Type       string
	BodySHA256 string
	// PayloadRef, when set, says the body is kept outside the ledger
	// (Record.PayloadRef); no payload item is written for it.
	PayloadRef string
	// Trace is the delivery's trace header (Record.Trace), at most
	// MaxTrace bytes.
	Trace string
}

// MaxTrace is the longest trace header a record keeps: X-Ray's is 74 bytes.
const MaxTrace = 128

// Create claims ev's identity with one conditional put. The first caller
// gets created == true; every other caller gets the existing record and
// created == false (a duplicate is a result, not an error).
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
		Format: Format, Release: version.Version,
		Trace: ev.Trace,
	}
	token := dynamo.NewToken()
	item := map[string]types.AttributeValue{
		attrPK: dynamo.S(pk), attrSK: dynamo.S(skRecord), attrCreator: dynamo.S(token),
		attrSource: dynamo.S(ev.Source), attrTenant: dynamo.S(ev.Tenant), attrKey: dynamo.S(ev.ID),
		attrStatus: dynamo.S(string(Received)), attrAttempts: dynamo.N(0), attrReclaims: dynamo.N(0),
		attrCreated: dynamo.Millis(now), attrUpdated: dynamo.Millis(now), attrExpires: dynamo.N(rec.ExpiresAt.Unix()),
		attrDueShard: dynamo.N(int64(rec.DueShard)), attrDueAt: dynamo.Millis(rec.DueAt), attrVersion: dynamo.N(1),
		attrFormat: dynamo.N(Format), attrRelease: dynamo.S(version.Version),
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
	if ev.Trace != "" {
		if len(ev.Trace) > MaxTrace {
			return Record{}, false, fmt.Errorf("%w: trace header is %d bytes, over %d", ErrInvalid, len(ev.Trace), MaxTrace)
		}
		item[attrTrace] = dynamo.S(ev.Trace)
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
		// Refused, but gone or expired when read back: someone else owns
		// the identity's fate. A conflict makes the sender retry (5xx).
		return Record{}, false, fmt.Errorf("create %s: %w", ev.Key, ErrConflict)
	}
	return *old, false, nil
}

// settle decides what a refused or failed conditional write on id's record
// did (dynamo.Settle). It returns the record and mine == true when mine
// recognises the caller's own write (its answer was lost). Otherwise it
// returns the record that refused the write (nil: none, or expired), or an
// error. Without this read-back, a write that happened would count as
// failed, and what must follow it (answer, enqueue) would wait for a retry.
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

// PutPayload stores the event's body, compressed when that is smaller,
// marked with digest, its record's body digest (see PayloadOf). The
// receiver that created the record writes it once, or again, identically,
// to repair one that died between the two writes. It does not read the
// record: the caller writes only a body whose digest is the record's.
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

// payloadItem is id's payload item for body, marked with digest when there
// is one; the caller adds the expiry.
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

// Lease is a worker's hold on a record: what Claim returns and what every
// write only the holder may make takes. Extend returns a new one.
type Lease struct {
	ID    Key
	Token string    // the owner token stored in lease_owner
	Until time.Time // when the lease ends, by the ledger's clock
	// Record is the record as the claim left it. A holder that updates it
	// from its later writes (SaveSteps) saves Fail a second write; Fail
	// never trusts it blindly.
	Record Record
}

// Claim takes a lease on id for d. It succeeds from received, failed, or
// processing with an expired lease. The lease carries the record as
// claimed: a fresh owner token, attempts+1, the run counted as interrupted
// until its answer (Complete, Fail, Bury) takes that back, and the steps of
// earlier attempts. A record that kept an earlier lease's end (Fail with a
// step left started) is claimed only once that end has passed.
//
// Refusals: ErrNotFound; ErrTerminal when done or dead (the StateError's
// Record says which); ErrLeased while another lease, or a kept end, lives.
// Claim takes whatever event the record holds; the processor uses
// ClaimEvent.
func (l *Ledger) Claim(ctx context.Context, id Key, d time.Duration) (Lease, error) {
	return l.claim(ctx, id, d, nil)
}

// ClaimEvent is Claim for the event with identity ev (a queue message's
// type and body digest): the same write also requires the record to be
// that event (Record.Mismatch). For another event it refuses with a
// StateError of ErrNotThisEvent, before any other refusal, and leaves the
// record untouched.
func (l *Ledger) ClaimEvent(ctx context.Context, id Key, d time.Duration, ev Identity) (Lease, error) {
	return l.claim(ctx, id, d, &ev)
}

// identityCond is Record.Mismatch as the start of a condition expression,
// with ev's digest and type as :sha and :type. It is "" (ev nil: any
// event) or ends in " AND ".
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
	p := func(counters []string) *exprParts {
		q := parts(append([]string{"#st = :processing", "lease_owner = :tok", "lease_until = :until", "attempts = attempts + :one", "updated_at = :now"}, counters...), nil,
			map[string]types.AttributeValue{
				":processing": dynamo.S(string(Processing)), ":received": dynamo.S(string(Received)), ":failed": dynamo.S(string(Failed)),
				":tok": dynamo.S(token), ":until": dynamo.Millis(now.Add(d)), ":now": dynamo.Millis(now), ":nows": dynamo.N(now.Unix()), ":zero": dynamo.N(0),
				":sha": dynamo.S(want.BodySHA256), ":type": dynamo.S(want.Type), // identityCond's; dropped when unused
			})
		q.startRun(now)
		return q
	}
	cond := "attribute_exists(pk) AND expires_at > :nows AND " + identityCond(ev) + "(" +
		"(#st IN (:received, :failed) AND (attribute_not_exists(lease_until) OR lease_until <= :now)) OR " +
		"(#st = :processing AND lease_until <= :now))"
	mine := func(r Record) bool { return r.Status == Processing && r.LeaseOwner == token }
	rec, old, refused, err := l.update(ctx, "claim", id, p([]string{interruptedUp}), "attribute_exists(#format) AND "+cond, mine)
	if err == nil && refused && old != nil && old.Format < Format &&
		!old.Status.Terminal() && !old.LeaseLive(now) && !old.Expired(now) && (ev == nil || old.Mismatch(*ev) == "") {
		// Written before this format: the same claim, storing the counters
		// as decoded (fromFormat1) on the version read. Once per record.
		claimed := *old
		claimed.Interrupted++ // this run, as interruptedUp counts it
		sets, vals := counterSets(claimed)
		q := p(sets)
		maps.Copy(q.vals, vals)
		q.vals[":ver"] = dynamo.N(old.Version)
		rec, old, refused, err = l.update(ctx, "claim", id, q, "ver = :ver AND "+cond, mine)
	}
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

// SaveSteps records step changes while the lease is held: one UpdateItem
// of one write unit. The processor saves the last step done before the next
// starts, or marks an at-most-once step started before its effect runs; the
// last step's completion rides on Complete. ErrLeaseLost when the lease is
// gone.
func (l *Ledger) SaveSteps(ctx context.Context, lease Lease, changes ...StepChange) (Record, error) {
	if len(changes) == 0 {
		return Record{}, fmt.Errorf("%w: no step changes to save", ErrInvalid)
	}
	return l.owned(ctx, "save steps", lease, parts([]string{"updated_at = :now"}, nil, nil), changes, "")
}

// Complete marks a leased record done, with the step changes in the same
// write. ErrLeaseLost when the lease is gone.
//
// The record keeps its due-index entry. Removing it would cost a second
// index write; the reclaimer reads the entry once, at an eighth of that
// price (see Peek), and passes it. TTL deletes it with the record for free.
func (l *Ledger) Complete(ctx context.Context, lease Lease, changes ...StepChange) (Record, error) {
	return l.owned(ctx, "complete", lease,
		parts([]string{"#st = :done", interruptedDown, "updated_at = :now"}, []string{"lease_owner", "lease_until"},
			map[string]types.AttributeValue{":done": dynamo.S(string(Done))}).ending(RunDone, ""), changes, "")
}

// ownerCond holds while the lease's token owns a live lease on a processing
// record.
const ownerCond = "#st = :processing AND lease_owner = :tok AND lease_until > :now"

// The run counters. A claim counts its run as interrupted in advance, and
// the run's answer (Complete, Fail, Bury) takes the count back. So a run
// that never answers stays counted without anyone noticing it. Records
// written before the counters existed start at zero.
const (
	interruptedUp   = attrInterrupts + " = if_not_exists(" + attrInterrupts + ", :zero) + :one"
	interruptedDown = attrInterrupts + " = if_not_exists(" + attrInterrupts + ", :zero) - :one"
	failuresUp      = attrFailures + " = if_not_exists(" + attrFailures + ", :zero) + :one"
	givenBackUp     = attrGivenBack + " = if_not_exists(" + attrGivenBack + ", :zero) + :one"
)

// owned runs a lease holder's write: p plus the step changes, conditioned
// on the lease and on extra, when given.
func (l *Ledger) owned(ctx context.Context, op string, lease Lease, p *exprParts, changes []StepChange, extra string) (Record, error) {
	if err := lease.ID.Validate(); err != nil {
		return Record{}, err
	}
	if lease.Token == "" {
		return Record{}, fmt.Errorf("%w: empty lease token", ErrInvalid)
	}
	now := l.now()
	if err := p.addSteps(changes, now, lease.Record.Steps); err != nil {
		return Record{}, err
	}
	if p.ends != "" {
		p.endRun(lease.Record, p.ends, p.why, now)
	}
	p.vals[":processing"] = dynamo.S(string(Processing))
	p.vals[":tok"] = dynamo.S(lease.Token)
	p.vals[":now"] = dynamo.Millis(now)
	p.vals[":zero"] = dynamo.N(0)
	// A final write ends the lease, so it signs itself with the lease token:
	// the SDK's retry after a lost answer then recognises it.
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
var finalStatus = map[string]Status{"complete": Done, "skip": Done, "fail": Failed, "release": Failed, "bury": Dead}

// update runs one conditional UpdateItem on id's record, adding the
// version increment. It returns the record as written, from the answer or,
// when that was lost, as mine recognises it (settle). A refused write
// returns refused == true and old, the record that refused it (nil: none).
func (l *Ledger) update(ctx context.Context, op string, id Key, p *exprParts, cond string, mine func(Record) bool) (rec Record, old *Record, refused bool, err error) {
	p.vals[":one"] = dynamo.N(1)
	p.vals[":format"], p.vals[":release"] = dynamo.N(Format), dynamo.S(version.Version)
	p.set = append(p.set, attrVersion+" = "+attrVersion+" + :one", "#format = :format", "#release = :release")
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
