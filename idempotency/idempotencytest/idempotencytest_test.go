package idempotencytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/idempotency/idempotencytest"
)

type req struct {
	OrderID string `json:"order_id"`
}

func TestStoreReplaysAndExpires(t *testing.T) {
	t.Parallel()
	s := idempotencytest.NewStore(t, idempotency.Options{Expiry: time.Hour})
	runs := 0
	f, err := idempotency.Wrap(s.Store, "create-order", func(ctx context.Context, r req) (int, error) {
		runs++
		return runs, nil
	}, idempotency.Config[req, int]{KeyPath: "order_id"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if got, info, err := f.Call(ctx, req{"o-1"}); got != 1 || err != nil || info.Outcome != idempotency.Executed {
		t.Fatalf("first: %d %+v %v", got, info, err)
	}
	if got, info, err := f.Call(ctx, req{"o-1"}); got != 1 || err != nil || !info.Replayed() {
		t.Fatalf("repeat: %d %+v %v", got, info, err)
	}
	rec, ok := s.Record("create-order", "o-1")
	if !ok || rec.Status != idempotency.StatusCompleted || string(rec.Result) != "1" {
		t.Fatalf("record: %+v %v", rec, ok)
	}
	if r := s.Memory.Requests(); r["Claim"] != 2 || r["Complete"] != 1 {
		t.Fatalf("requests %v", r)
	}
	s.Advance(time.Hour)
	if got, info, _ := f.Call(ctx, req{"o-1"}); got != 2 || info.Outcome != idempotency.Executed {
		t.Fatalf("after expiry: %d %+v", got, info)
	}
	if _, ok := s.Record("create-order", "o-2"); ok {
		t.Fatal("record for a key never used")
	}
}
