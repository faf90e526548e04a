package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

// TestExists pins the read reconcile relies on: absent until created, one
// request, and an expired record still counts (feeding its event again
// would let Create replace the record and run the effects twice).
func TestExists(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Retention = time.Hour })
	id := newID(t)
	if ok, err := f.l.Exists(t.Context(), id); ok || err != nil {
		t.Fatalf("absent: %v %v", ok, err)
	}
	create(t, f, id)
	f.meter.Reset()
	if ok, err := f.l.Exists(t.Context(), id); !ok || err != nil {
		t.Fatalf("present: %v %v", ok, err)
	}
	if got := f.meter.Snapshot(); got["DynamoDB.GetItem"] != 1 || len(got) != 1 {
		t.Fatalf("requests %v, want one GetItem", got)
	}
	f.clock.Advance(time.Hour + time.Second)
	if _, err := f.l.Get(t.Context(), id); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("expired get: %v", err)
	}
	if ok, err := f.l.Exists(t.Context(), id); !ok || err != nil {
		t.Fatalf("expired but not yet deleted must count as present: %v %v", ok, err)
	}
	if _, err := f.l.Exists(t.Context(), ledger.Key{Source: "stripe", Tenant: "acme"}); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
}
