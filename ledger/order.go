package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/hookledger/hookledger/dynamo"
)

// Attributes of the order item.
const (
	skOrder      = "o"
	attrPosition = "pos"
	attrHolder   = "holder"
	attrHoldTok  = "hold_tok"
)

// MaxResource bounds a resource name, in bytes: the ledger keeps one item
// per resource, keyed by it.
const MaxResource = 512

// takeTries bounds how often TakeOrder writes after finding the item
// changed between its read and its write (another event took the resource
// in between): past it, the resource counts as busy.
const takeTries = 3

// Order is the order item of one (source, tenant, resource): the newest
// position an event took, and which run of which event took it.
type Order struct {
	Source, Tenant, Resource string
	Position                 int64
	Holder                   string // the id of the event that took it last
	HoldToken                string // the lease token of that event's run
	ExpiresAt                time.Time
}

// Taken is what TakeOrder found before its write.
type Taken struct {
	// Before is the resource's item as it was (nil: the resource's first
	// event, or its item had expired).
	Before *Order
	// Tie: another event had taken the very same position; this one took
	// the resource after it (equal positions are applied in turn).
	Tie bool
}

// Refusals of TakeOrder, in an *OrderError.
var (
	// ErrStale: a newer position of the resource was taken by another
	// event. Nothing was written.
	ErrStale = errors.New("ledger: a newer event of the resource was taken")
	// ErrBusy: another event's run holds the resource and is not over.
	// Nothing was written.
	ErrBusy = errors.New("ledger: another event's run holds the resource")
)

// OrderError is ErrStale or ErrBusy with the resource's item as found and,
// for ErrBusy, the holding event's record (nil when its record is gone).
type OrderError struct {
	Err    error
	Order  Order
	Holder *Record
}

func (e *OrderError) Error() string {
	if e.Holder != nil {
		return fmt.Sprintf("order %s/%s/%s: %v (position %d, event %s, %s)", e.Order.Source, e.Order.Tenant, e.Order.Resource, e.Err, e.Order.Position, e.Order.Holder, e.Holder.Status)
	}
	return fmt.Sprintf("order %s/%s/%s: %v (position %d, event %s)", e.Order.Source, e.Order.Tenant, e.Order.Resource, e.Err, e.Order.Position, e.Order.Holder)
}

func (e *OrderError) Unwrap() error { return e.Err }

// orderPK is the order item's partition key: "ord#", then source, tenant
// and resource, each escaped, joined by "#" (no two triples share one).
func orderPK(source, tenant, resource string) string {
	return "ord#" + escape(source) + "#" + escape(tenant) + "#" + escape(resource)
}

func orderKey(source, tenant, resource string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: dynamo.S(orderPK(source, tenant, resource)), attrSK: dynamo.S(skOrder)}
}

// checkResource refuses what the ledger cannot key an order item by.
func checkResource(id Key, resource string) error {
	switch {
	case resource == "":
		return fmt.Errorf("%w: resource is empty", ErrInvalid)
	case len(resource) > MaxResource:
		return fmt.Errorf("%w: resource is %d bytes, over %d", ErrInvalid, len(resource), MaxResource)
	case !utf8.ValidString(resource):
		return fmt.Errorf("%w: resource is not valid UTF-8", ErrInvalid)
	}
	if n := len(orderPK(id.Source, id.Tenant, resource)); n > MaxPKBytes {
		return fmt.Errorf("%w: order key is %d bytes, over DynamoDB's %d-byte partition key limit", ErrInvalid, n, MaxPKBytes)
	}
	return nil
}

func decodeOrder(source, tenant, resource string, item map[string]types.AttributeValue) Order {
	o := Order{Source: source, Tenant: tenant, Resource: resource,
		Position: dynamo.GetN(item, attrPosition), Holder: dynamo.GetS(item, attrHolder), HoldToken: dynamo.GetS(item, attrHoldTok)}
	if e := dynamo.GetN(item, attrExpires); e != 0 {
		o.ExpiresAt = time.Unix(e, 0).UTC()
	}
	return o
}

// GetOrder reads the order item of (source, tenant, resource) with a
// consistent read. An expired one is ErrNotFound.
func (l *Ledger) GetOrder(ctx context.Context, source, tenant, resource string) (Order, error) {
	id := Key{Source: source, Tenant: tenant, ID: "-"}
	if err := id.Validate(); err != nil {
		return Order{}, err
	}
	if err := checkResource(id, resource); err != nil {
		return Order{}, err
	}
	o, err := l.readOrder(ctx, source, tenant, resource)
	if err != nil {
		return Order{}, err
	}
	if o == nil || !l.now().Before(o.ExpiresAt) {
		return Order{}, fmt.Errorf("order %s/%s/%s: %w", source, tenant, resource, ErrNotFound)
	}
	return *o, nil
}

// readOrder reads the item as stored, expired or not (nil: none).
func (l *Ledger) readOrder(ctx context.Context, source, tenant, resource string) (*Order, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &l.opt.Table, Key: orderKey(source, tenant, resource), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read order %s/%s/%s: %w: %v", source, tenant, resource, ErrUnavailable, err)
	}
	if out.Item == nil {
		return nil, nil
	}
	o := decodeOrder(source, tenant, resource, out.Item)
	return &o, nil
}

// TakeOrder takes resource for the run that holds lease, at position:
// until that run is over, no other event of the resource passes. It guards
// a route that keeps its events in order, before the handler runs, with at
// most one write:
//
//  1. It reads the resource's item (one consistent read).
//  2. Stale: another event took a newer position. Nothing is written
//     (ErrStale). With force (an operator's replay to apply it anyway) the
//     event takes the resource, and its position becomes the resource's.
//  3. Busy: another event took it and its run may still be applying it,
//     as that event's record tells (one more read): the lease has not
//     ended and no other run claimed it since. A run that left a step
//     started keeps its lease's end, and so the resource. Nothing is
//     written (ErrBusy).
//  4. Otherwise one conditional UpdateItem takes it, conditioned on the
//     item as read. If another event took it in between, the refusal's
//     old item is judged again, a few times at most.
//
// The provider does not order equal positions: an event at a position
// another took runs after that run is over (Taken.Tie). The event that took
// the resource may take it again (a retry), at any position. A dead
// event's position stays taken: its state applies once it is replayed.
func (l *Ledger) TakeOrder(ctx context.Context, lease Lease, resource string, position int64, force bool) (Taken, error) {
	id := lease.ID
	if err := id.Validate(); err != nil {
		return Taken{}, err
	}
	if lease.Token == "" {
		return Taken{}, fmt.Errorf("%w: empty lease token", ErrInvalid)
	}
	if err := checkResource(id, resource); err != nil {
		return Taken{}, err
	}
	seen, err := l.readOrder(ctx, id.Source, id.Tenant, resource)
	if err != nil {
		return Taken{}, err
	}
	for try := 1; ; try++ {
		now := l.now()
		cur := seen
		if cur != nil && !now.Before(cur.ExpiresAt) {
			cur = nil // expired: as if absent (TTL deletion lags)
		}
		if cur != nil && cur.HoldToken == lease.Token {
			return Taken{}, nil // taken by this run already (a retried call)
		}
		if cur != nil && cur.Holder != id.ID {
			if cur.Position > position && !force {
				return Taken{}, &OrderError{Err: ErrStale, Order: *cur}
			}
			holder, over, err := l.runOver(ctx, Key{Source: id.Source, Tenant: id.Tenant, ID: cur.Holder}, cur.HoldToken)
			if err != nil {
				return Taken{}, err
			}
			if !over {
				return Taken{}, &OrderError{Err: ErrBusy, Order: *cur, Holder: holder}
			}
		}
		took := Taken{Before: cur, Tie: cur != nil && cur.Holder != id.ID && cur.Position == position}
		ok, again, err := l.writeOrder(ctx, lease, resource, position, seen)
		if err != nil {
			return Taken{}, err
		}
		if ok {
			return took, nil
		}
		if try == takeTries {
			o := Order{Source: id.Source, Tenant: id.Tenant, Resource: resource}
			if again != nil {
				o = *again
			}
			return Taken{}, &OrderError{Err: ErrBusy, Order: o}
		}
		seen = again
	}
}

// runOver reports whether event id's run with lease token tok can no
// longer apply anything: its record is gone, its lease has ended, or
// another run owns it now.
func (l *Ledger) runOver(ctx context.Context, id Key, tok string) (*Record, bool, error) {
	rec, err := l.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	over := !l.now().Before(rec.LeaseUntil) || rec.LeaseOwner != "" && rec.LeaseOwner != tok
	return &rec, over, nil
}

// writeOrder makes TakeOrder's conditional write, conditioned on the item
// being seen (nil: none). It reports whether it took the resource and, if
// not, the item in its way (nil: gone now).
func (l *Ledger) writeOrder(ctx context.Context, lease Lease, resource string, position int64, seen *Order) (bool, *Order, error) {
	id := lease.ID
	now := l.now()
	cond := "attribute_not_exists(pk)"
	vals := map[string]types.AttributeValue{
		":pos": dynamo.N(position), ":key": dynamo.S(id.ID), ":tok": dynamo.S(lease.Token),
		":exp": dynamo.N(now.Add(l.retention(id.Source)).Truncate(time.Second).Unix()),
	}
	if seen != nil {
		cond = attrHoldTok + " = :seen"
		vals[":seen"] = dynamo.S(seen.HoldToken)
	}
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           &l.opt.Table,
		Key:                                 orderKey(id.Source, id.Tenant, resource),
		UpdateExpression:                    aws.String("SET " + attrPosition + " = :pos, " + attrHolder + " = :key, " + attrHoldTok + " = :tok, " + attrExpires + " = :exp"),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return true, nil, nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		// The answer may have been lost after the write took effect: read
		// it back once, as the record's writes do.
		if ctx.Err() == nil {
			if o, rerr := l.readOrder(ctx, id.Source, id.Tenant, resource); rerr == nil && o != nil && o.HoldToken == lease.Token {
				return true, nil, nil
			}
		}
		return false, nil, fmt.Errorf("take order %s/%s/%s: %w: %v", id.Source, id.Tenant, resource, ErrUnavailable, err)
	}
	var old *Order
	if ccf.Item != nil {
		o := decodeOrder(id.Source, id.Tenant, resource, ccf.Item)
		old = &o
	} else if old, err = l.readOrder(ctx, id.Source, id.Tenant, resource); err != nil {
		return false, nil, err
	}
	if old != nil && old.HoldToken == lease.Token {
		return true, nil, nil // our own write, retried by the SDK after its answer was lost
	}
	return false, old, nil // nil: the item we saw is gone (TTL): judge again from none
}

// ResetOrder forgets the position taken for (source, tenant, resource),
// so its next event is its first: the operator's way out when a wrong
// position makes every real event stale. It refuses with ErrBusy while the
// holder's run may be applying its event, and returns the item as it was
// (ErrNotFound: none). Its conditional write expires the item.
func (l *Ledger) ResetOrder(ctx context.Context, source, tenant, resource string) (Order, error) {
	o, err := l.GetOrder(ctx, source, tenant, resource)
	if err != nil {
		return Order{}, err
	}
	holder, over, err := l.runOver(ctx, Key{Source: source, Tenant: tenant, ID: o.Holder}, o.HoldToken)
	if err != nil {
		return Order{}, err
	}
	if !over {
		return Order{}, &OrderError{Err: ErrBusy, Order: o, Holder: holder}
	}
	_, err = l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &l.opt.Table,
		Key:                       orderKey(source, tenant, resource),
		UpdateExpression:          aws.String("SET " + attrExpires + " = :exp"),
		ConditionExpression:       aws.String(attrHoldTok + " = :seen"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":exp": dynamo.N(l.now().Unix()), ":seen": dynamo.S(o.HoldToken)},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return Order{}, &OrderError{Err: ErrBusy, Order: o} // another event took it since
	case err != nil:
		return Order{}, fmt.Errorf("reset order %s/%s/%s: %w: %v", source, tenant, resource, ErrUnavailable, err)
	}
	return o, nil
}

// Skip marks a leased stale event done without its handler running, with
// the reason (Record.Skipped). It is Complete's write plus the reason (keep
// the two in step).
func (l *Ledger) Skip(ctx context.Context, lease Lease, reason string) (Record, error) {
	if reason == "" {
		return Record{}, fmt.Errorf("%w: a skipped event needs its reason", ErrInvalid)
	}
	return l.owned(ctx, "skip", lease,
		parts([]string{"#st = :done", interruptedDown, "updated_at = :now", attrSkipped + " = :why"}, []string{"lease_owner", "lease_until"},
			map[string]types.AttributeValue{":done": dynamo.S(string(Done)), ":why": dynamo.S(trim(reason))}).ending(RunSkipped, reason), nil, "")
}

// ReplayApplyStale is Replay for an event to apply even if stale
// (Record.AppliesStale): its InOrder route lets it take its resource
// whatever position was taken since. A later plain Replay forgets it.
func (l *Ledger) ReplayApplyStale(ctx context.Context, id Key, changes ...StepChange) (Record, error) {
	return l.replay(ctx, id, true, changes)
}

// AppliesStale reports whether the record's current replay asked to apply
// the event even if stale; a later plain replay forgets it.
func (r Record) AppliesStale() bool {
	return !r.ApplyStale.IsZero() && r.ApplyStale.Equal(r.ReplayedAt)
}
