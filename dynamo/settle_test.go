package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// TestSettle walks every way a conditional write's error can be settled.
// The stores prove the same against the emulator (their tests of writes
// whose answer was lost); this pins the branches and the reads each costs.
func TestSettle(t *testing.T) {
	t.Parallel()
	errLost := errors.New("request canceled: retry quota exceeded")
	errDown := errors.New("store unavailable")
	errCorrupt := errors.New("corrupt item")
	refused := func(item map[string]types.AttributeValue) error {
		return &types.ConditionalCheckFailedException{Item: item}
	}
	item := func(by string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"by": dynamo.S(by)}
	}
	for _, tc := range []struct {
		name     string
		err      error
		stored   string // the token the consistent read finds; "" none
		canceled bool
		wantRec  string // the record's token; "" nil
		wantMine bool
		wantErr  error
		wantRead int
	}{
		{name: "refused by the caller's own earlier attempt", err: refused(item("me")), wantRec: "me", wantMine: true},
		{name: "refused by another's record", err: refused(item("other")), wantRec: "other"},
		{name: "refused by an expired record", err: refused(item("expired"))},
		{name: "refused by an item that does not decode", err: refused(item("corrupt")), wantErr: errCorrupt},
		{name: "refused without ALL_OLD", err: refused(nil), stored: "other", wantRec: "other", wantRead: 1},
		{name: "refused without ALL_OLD, the caller's", err: refused(nil), stored: "me", wantRec: "me", wantMine: true, wantRead: 1},
		{name: "refused without ALL_OLD, gone by the read", err: refused(nil), wantRead: 1},
		{name: "answer lost, the write happened", err: errLost, stored: "me", wantRec: "me", wantMine: true, wantRead: 1},
		{name: "answer lost, the write did not happen", err: errLost, stored: "other", wantErr: errDown, wantRead: 1},
		{name: "answer lost, the caller gave up", err: errLost, stored: "me", canceled: true, wantErr: errDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.canceled {
				cancel()
			}
			reads := 0
			rec := func(by string) *string {
				if by == "" || by == "expired" {
					return nil
				}
				return &by
			}
			got, mine, err := dynamo.Settle(ctx, tc.err, dynamo.Settler[string]{
				Decode: func(it map[string]types.AttributeValue) (*string, error) {
					if dynamo.GetS(it, "by") == "corrupt" {
						return nil, errCorrupt
					}
					return rec(dynamo.GetS(it, "by")), nil
				},
				Read:        func(context.Context) (*string, error) { reads++; return rec(tc.stored), nil },
				Mine:        func(by string) bool { return by == "me" },
				Unavailable: func(err error) error { return errors.Join(errDown, err) },
			})
			gotRec := ""
			if got != nil {
				gotRec = *got
			}
			if gotRec != tc.wantRec || mine != tc.wantMine || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) || reads != tc.wantRead {
				t.Fatalf("got record %q, mine %v, err %v, %d reads; want %q, %v, %v, %d reads", gotRec, mine, err, reads, tc.wantRec, tc.wantMine, tc.wantErr, tc.wantRead)
			}
		})
	}
}
