package idempotency_test

// Conformance scenarios for the claim's life: a claim outlives a short
// expiry window, its holder completes after the window, the lease margin,
// a take-over keeps the payload the key was first used with, and results
// too large to replay. Each runs against DynamoDB and the in-memory
// backend.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookledger/hookledger/idempotency"
)

// TestConformanceClaimOutlivesExpiry: a claim lasts as long as its lease,
// not as long as the record's window. With Expiry (5 s) shorter than the
// invocation (60 s), a duplicate arriving after the window but inside the
// lease is refused (or waits), never runs the function beside the holder;
// the in-progress record's expires_at (DynamoDB's TTL attribute) is not
// before its lease end; completion starts the real window.
func TestConformanceClaimOutlivesExpiry(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		c := counted{block: make(chan struct{}), inside: make(chan struct{}, 1)}
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{Expiry: 5 * time.Second})
		w := wrap(t, e, c.fn, idempotency.Config[order, receipt]{Expiry: 5 * time.Second, Wait: 20 * time.Second})
		ctx := deadline(t, time.Minute) // a 60 s Lambda
		done := make(chan receipt)
		go func() {
			r, _, _ := f.Call(ctx, order{ID: "o-1"})
			done <- r
		}()
		<-c.inside
		held := record(t, e, "create-order", "o-1")
		if held.ExpiresAt.Before(held.LeaseUntil) {
			t.Errorf("in progress: expires_at %v is before the lease end %v (TTL may delete a live claim)", held.ExpiresAt, held.LeaseUntil)
		}
		e.clock.Advance(6 * time.Second) // past the window; the lease has ~54 s left
		if r, err := e.backend.Get(t.Context(), held.Key); err != nil || r.LeaseOwner != held.LeaseOwner {
			t.Fatalf("get of a live claim past its window: %+v %v", r, err)
		}
		if _, info, err := f.Call(ctx, order{ID: "o-1"}); !errors.Is(err, idempotency.ErrInProgress) || info.Outcome != idempotency.InProgress {
			t.Fatalf("duplicate past the window, inside the lease: %+v %v (runs %d)", info, err, c.runs.Load())
		}
		type res struct {
			r    receipt
			info idempotency.Info
			err  error
		}
		waiter := make(chan res)
		go func() {
			r, info, err := w.Call(ctx, order{ID: "o-1"})
			waiter <- res{r, info, err}
		}()
		time.Sleep(150 * time.Millisecond) // let the waiter poll
		if n := c.runs.Load(); n != 1 {
			t.Fatalf("ran %d times while the first claim's lease was live", n)
		}
		close(c.block)
		first := <-done
		got := <-waiter
		if got.err != nil || !got.info.Replayed() || got.r != first || c.runs.Load() != 1 {
			t.Fatalf("waiter: %+v %+v %v (runs %d)", got.r, got.info, got.err, c.runs.Load())
		}
		r := record(t, e, "create-order", "o-1")
		if want := e.clock.Now().Add(5 * time.Second); r.Status != idempotency.StatusCompleted || r.ExpiresAt.After(want) || r.ExpiresAt.Before(want.Add(-time.Second)) {
			t.Fatalf("completed: %+v, want the window from completion (%v)", r, want)
		}
	})
}

// TestConformanceCompleteAfterWindow: the claim's holder stores its result
// even when the record's window and its lease have both passed while it
// ran, as long as no one took the key over (both backends check only the
// status and the claim token).
func TestConformanceCompleteAfterWindow(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{Expiry: time.Second, NoDeadlineLease: time.Minute}, func(t *testing.T, e *env) {
		for _, d := range []time.Duration{2 * time.Second, 2 * time.Minute} { // lease live, then lapsed too
			key := d.String()
			got, info, err := idempotency.Do(context.Background(), e.store, "job", key, func(ctx context.Context) (string, error) {
				e.clock.Advance(d)
				return "ok", nil
			})
			if err != nil || got != "ok" || info.Outcome != idempotency.Executed || !info.Stored {
				t.Fatalf("advance %v inside the call: %q %+v %v", d, got, info, err)
			}
			if _, info, err := idempotency.Do(context.Background(), e.store, "job", key, func(ctx context.Context) (string, error) { return "again", nil }); err != nil || !info.Replayed() {
				t.Fatalf("advance %v: repeat %+v %v", d, info, err)
			}
		}
	})
}

// TestConformanceLeaseMarginDefault: by default the claim lasts past the
// deadline by DefaultLeaseMargin, at least the time the completion write
// may take after the deadline, so a duplicate cannot take the key over
// while the holder is still storing its result.
func TestConformanceLeaseMarginDefault(t *testing.T) {
	t.Parallel()
	if idempotency.DefaultLeaseMargin < 5*time.Second {
		t.Fatalf("DefaultLeaseMargin %v is shorter than the completion write's 5 s", idempotency.DefaultLeaseMargin)
	}
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		c := counted{block: make(chan struct{}), inside: make(chan struct{}, 1)}
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{})
		go f.Call(deadline(t, 3*time.Second), order{ID: "o-1"})
		<-c.inside
		defer close(c.block)
		r := record(t, e, "create-order", "o-1")
		now := e.clock.Now()
		if min := now.Add(2*time.Second + idempotency.DefaultLeaseMargin); r.LeaseUntil.Before(min) || r.LeaseUntil.After(min.Add(time.Second)) {
			t.Fatalf("lease ends %v after now, want the deadline plus %v", r.LeaseUntil.Sub(now), idempotency.DefaultLeaseMargin)
		}
		e.clock.Advance(3*time.Second + idempotency.DefaultLeaseMargin/2) // past the deadline, inside the margin
		if _, _, err := f.Call(deadline(t, 30*time.Second), order{ID: "o-1"}); !errors.Is(err, idempotency.ErrInProgress) {
			t.Fatalf("inside the margin: %v, want ErrInProgress", err)
		}
	})
}

// TestConformanceTakeOverKeepsPayload: after a failure or a lapsed claim,
// the key still belongs to the payload it was first used with: a call
// with other validated fields gets ErrPayloadMismatch and changes nothing,
// and the original payload's retry runs as the next attempt.
func TestConformanceTakeOverKeepsPayload(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{NoDeadlineLease: time.Minute}, func(t *testing.T, e *env) {
		var runs atomic.Int64
		fail := true
		f := wrap(t, e, func(ctx context.Context, o order) (receipt, error) {
			runs.Add(1)
			if fail {
				return receipt{}, errors.New("transient")
			}
			return receipt{OrderID: o.ID, Serial: int64(o.Amount)}, nil
		}, idempotency.Config[order, receipt]{ValidatePath: "amount"})
		ctx := context.Background()
		if _, info, _ := f.Call(ctx, order{ID: "o-1", Amount: 1}); info.Outcome != idempotency.Failed {
			t.Fatalf("first call: %+v", info)
		}
		fail = false
		before := record(t, e, "create-order", "o-1")
		if _, info, err := f.Call(ctx, order{ID: "o-1", Amount: 999}); !errors.Is(err, idempotency.ErrPayloadMismatch) || info.Outcome != idempotency.Mismatch {
			t.Fatalf("other payload after a failure: %+v %v", info, err)
		}
		if after := record(t, e, "create-order", "o-1"); after.Version != before.Version || after.Validation != before.Validation || runs.Load() != 1 {
			t.Fatalf("a refused take-over changed the record or ran: %+v → %+v (runs %d)", before, after, runs.Load())
		}
		got, info, err := f.Call(ctx, order{ID: "o-1", Amount: 1})
		if err != nil || info.Outcome != idempotency.Executed || info.Attempt != 2 || got.Serial != 1 {
			t.Fatalf("original payload's retry: %+v %+v %v", got, info, err)
		}

		// A lapsed claim: the holder crashed (its claim is never released).
		k, _ := idempotency.KeyOf("create-order", "o-2")
		v, _ := idempotency.KeyOf("v", 1) // any digest other than the newcomer's
		if _, claimed, err := e.backend.Claim(ctx, k, idempotency.Claim{LeaseUntil: e.clock.Now().Add(time.Second),
			ExpiresAt: e.clock.Now().Add(time.Hour), Validation: v}); err != nil || !claimed {
			t.Fatalf("crashed holder's claim: %v %v", claimed, err)
		}
		e.clock.Advance(2 * time.Second)
		if _, info, err := f.Call(ctx, order{ID: "o-2", Amount: 5}); !errors.Is(err, idempotency.ErrPayloadMismatch) || info.Outcome != idempotency.Mismatch {
			t.Fatalf("other payload after a lapsed claim: %+v %v", info, err)
		}
	})
}

// TestConformanceHugeCompressibleResult: a result whose encoding is over
// the decompression limit (MaxResultDecodedBytes) is unstorable even when
// it compresses far below MaxResultBytes: it could be stored, but never
// replayed. Both backends refuse it alike, typed, and the repeat does not
// run the call again.
func TestConformanceHugeCompressibleResult(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := deadline(t, time.Minute)
		var runs atomic.Int64
		big := strings.Repeat("a", idempotency.MaxResultDecodedBytes)
		fn := func(context.Context) (string, error) { runs.Add(1); return big, nil } // + 2 quotes: over by 2
		_, info, err := idempotency.Do(ctx, e.store, "report", "r-1", fn)
		var ue *idempotency.UnstorableError
		if !errors.Is(err, idempotency.ErrResultTooLarge) || !errors.As(err, &ue) || info.Stored || info.Outcome != idempotency.Executed ||
			!strings.Contains(err.Error(), "8388608") {
			t.Fatalf("first: %+v %v", info, err)
		}
		_, info, err = idempotency.Do(ctx, e.store, "report", "r-1", fn)
		if !errors.Is(err, idempotency.ErrResultTooLarge) || !info.Replayed() || runs.Load() != 1 {
			t.Fatalf("repeat: %+v %v (runs %d)", info, err, runs.Load())
		}
		// Just under the limit it is stored and replays.
		fits := func(context.Context) (string, error) { return big[:len(big)-2], nil }
		if _, info, err := idempotency.Do(ctx, e.store, "report", "r-2", fits); err != nil || !info.Stored {
			t.Fatalf("at the limit: %+v %v", info, err)
		}
		if got, info, err := idempotency.Do(ctx, e.store, "report", "r-2", fits); err != nil || !info.Replayed() || len(got) != len(big)-2 {
			t.Fatalf("at the limit, repeat: %d %+v %v", len(got), info, err)
		}
	})
}

// TestConformanceBackendErrors: both backends answer with this package's
// sentinels, so that the store and its callers branch on one set whatever
// the backend: ErrNotFound for a read or a forget of a key that has no
// record, ErrLeaseLost for a completion or failure under a token that no
// longer holds the claim, ErrInvalid for a key no backend stores (and
// nothing stored for it).
func TestConformanceBackendErrors(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := t.Context()
		k, _ := idempotency.KeyOf("op", "absent")
		if _, err := e.backend.Get(ctx, k); !errors.Is(err, idempotency.ErrNotFound) {
			t.Errorf("get of an absent key: %v, want ErrNotFound", err)
		}
		if err := e.store.Forget(ctx, "op", "absent"); !errors.Is(err, idempotency.ErrNotFound) {
			t.Errorf("forget of an absent key: %v, want ErrNotFound", err)
		}
		k, _ = idempotency.KeyOf("op", "held")
		claim := idempotency.Claim{LeaseUntil: e.clock.Now().Add(time.Minute), ExpiresAt: e.clock.Now().Add(time.Hour)}
		if _, claimed, err := e.backend.Claim(ctx, k, claim); err != nil || !claimed {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		done := idempotency.Completion{Data: []byte(`"r"`), ExpiresAt: e.clock.Now().Add(time.Hour)}
		if _, err := e.backend.Complete(ctx, k, "not-the-token", done); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("completion under another token: %v, want ErrLeaseLost", err)
		}
		if err := e.backend.Fail(ctx, k, "not-the-token", "boom"); !errors.Is(err, idempotency.ErrLeaseLost) {
			t.Errorf("failure under another token: %v, want ErrLeaseLost", err)
		}
		for _, bad := range []string{"", strings.Repeat("k", idempotency.MaxKeyBytes+1)} {
			if _, _, err := e.backend.Claim(ctx, bad, claim); !errors.Is(err, idempotency.ErrInvalid) {
				t.Errorf("claim of a %d-byte key: %v, want ErrInvalid", len(bad), err)
			}
			if _, err := e.backend.Get(ctx, bad); !errors.Is(err, idempotency.ErrInvalid) {
				t.Errorf("get of a %d-byte key: %v, want ErrInvalid", len(bad), err)
			}
		}
	})
}
