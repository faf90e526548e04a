package dynamo

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Settler is what Settle needs of a store whose records are R.
type Settler[R any] struct {
	// Decode turns the item that refused a write (the write asks for
	// ALL_OLD) into its record: nil when the record has expired.
	Decode func(item map[string]types.AttributeValue) (*R, error)
	// Read reads the record with a consistent read: nil when there is none
	// or it has expired.
	Read func(ctx context.Context) (*R, error)
	// Mine recognises the caller's own write in a record by the token the
	// write stored (NewToken).
	Mine func(R) bool
	// Unavailable translates an error other than a refused condition into
	// the store's own (callers never see SDK error types).
	Unavailable func(error) error
}

// Settle decides what a conditional write that returned err (not nil) did.
// A refused condition comes with the item that refused it, or costs one
// consistent read where an endpoint leaves ALL_OLD out. If that item holds
// the caller's token, the SDK retried a write whose first answer was lost:
// the write is the caller's. Any other error may also hide a write that
// happened; while ctx lives, one consistent read tells.
//
// It returns the record and mine == true when the write is the caller's.
// Otherwise, with a nil error, the condition refused the write and the
// record is the one that refused it (nil: none, or expired).
func Settle[R any](ctx context.Context, err error, s Settler[R]) (rec *R, mine bool, _ error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		err = s.Unavailable(err)
		if ctx.Err() != nil {
			return nil, false, err
		}
		if r, rerr := s.Read(ctx); rerr == nil && r != nil && s.Mine(*r) {
			return r, true, nil
		}
		return nil, false, err
	}
	var old *R
	if ccf.Item != nil {
		old, err = s.Decode(ccf.Item)
	} else {
		old, err = s.Read(ctx)
	}
	if err != nil {
		return nil, false, err
	}
	return old, old != nil && s.Mine(*old), nil
}
