package idempotency_test

// The conformance suite: the scenarios Powertools' idempotency tests cover
// (first call, repeat, local cache, in progress, lapsed lease after a
// timeout, expiry, payload mismatch, handler error, concurrent first
// calls, missing keys, result round trips and size limits), each run
// against DynamoDB in the emulator and against idempotencytest's in-memory
// backend, so that the test helper is held to the same contract.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/idempotency/idempotencytest"
)

// env is one store under test.
type env struct {
	kind    string
	store   *idempotency.Store
	clock   *testClock
	backend idempotency.Backend
	count   func() int // backend requests since reset
	reset   func()
}

var kinds = []string{"dynamodb", "memory"}

// setup returns a store of the given kind on a fake clock.
func setup(t *testing.T, kind string, opt idempotency.Options) *env {
	t.Helper()
	c := newClock(time.Now().UTC().Truncate(time.Millisecond))
	opt.Now = c.Now
	if opt.Logger == nil {
		opt.Logger = quietLogger()
	}
	e := &env{kind: kind, clock: c}
	switch kind {
	case "dynamodb":
		m := newMeter()
		cfg := emulatorConfig(t, m.APIOption)
		db := dynamodb.NewFromConfig(cfg)
		opt.Table = uniqueName("idem-test")
		if err := idempotency.CreateTable(t.Context(), db, opt.Table); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &opt.Table}) })
		s, err := idempotency.NewStore(db, opt)
		if err != nil {
			t.Fatal(err)
		}
		e.store = s
		e.count = func() int {
			n := 0
			for _, v := range m.Snapshot() {
				n += v
			}
			return n
		}
		e.reset = m.Reset
	case "memory":
		mem := idempotencytest.NewMemory(c.Now)
		s, err := idempotency.NewStoreWith(mem, opt)
		if err != nil {
			t.Fatal(err)
		}
		e.store = s
		base := 0
		total := func() int {
			n := 0
			for _, v := range mem.Requests() {
				n += v
			}
			return n
		}
		e.count = func() int { return total() - base }
		e.reset = func() { base = total() }
	}
	e.backend = e.store.Backend()
	e.reset()
	return e
}

// each runs a scenario against every backend.
func each(t *testing.T, opt idempotency.Options, f func(t *testing.T, e *env)) {
	t.Helper()
	for _, k := range kinds {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			f(t, setup(t, k, opt))
		})
	}
}

type order struct {
	ID     string `json:"order_id"`
	Amount int    `json:"amount"`
	Note   string `json:"note,omitempty"`
}

type receipt struct {
	OrderID string `json:"order_id"`
	Serial  int64  `json:"serial"`
}

// counted is a function that counts its runs and returns a fresh serial
// each run, so a replay is told from a re-run by its result.
type counted struct {
	runs   atomic.Int64
	err    error
	block  chan struct{}
	inside chan struct{}
}

func (c *counted) fn(ctx context.Context, o order) (receipt, error) {
	n := c.runs.Add(1)
	if c.inside != nil {
		c.inside <- struct{}{}
	}
	if c.block != nil {
		<-c.block
	}
	if c.err != nil {
		return receipt{}, c.err
	}
	return receipt{OrderID: o.ID, Serial: n}, nil
}

func wrap(t *testing.T, e *env, fn func(context.Context, order) (receipt, error), c idempotency.Config[order, receipt]) *idempotency.Func[order, receipt] {
	t.Helper()
	if c.Key == nil && c.KeyPath == "" {
		c.KeyPath = "order_id"
	}
	f, err := idempotency.Wrap(e.store, "create-order", fn, c)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func deadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func record(t *testing.T, e *env, op string, key any) idempotency.Record {
	t.Helper()
	k, err := idempotency.KeyOf(op, key)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.backend.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("get %s: %v", k, err)
	}
	return r
}

func TestConformanceFirstCall(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		var c counted
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{ValidatePath: "amount"})
		got, info, err := f.Call(deadline(t, 30*time.Second), order{ID: "o-1", Amount: 5})
		if err != nil || got != (receipt{"o-1", 1}) || info.Outcome != idempotency.Executed || !info.Stored || info.Attempt != 1 || info.Replayed() {
			t.Fatalf("first call: %+v %+v %v", got, info, err)
		}
		if n := e.count(); n != 2 {
			t.Errorf("first call made %d backend requests, want 2 (claim, complete)", n)
		}
		r := record(t, e, "create-order", "o-1")
		want := e.clock.Now().Add(idempotency.DefaultExpiry)
		if r.Status != idempotency.StatusCompleted || r.Attempts != 1 || r.Validation == "" || string(r.Result) != `{"order_id":"o-1","serial":1}` ||
			r.ExpiresAt.Before(want.Add(-time.Second)) || r.ExpiresAt.After(want) || r.Key != info.Key {
			t.Fatalf("stored %+v (result %s)", r, r.Result)
		}
	})
}

func TestConformanceRepeatReplays(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		var c counted
		hooks := 0
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{ValidatePath: "amount",
			OnReplay: func(_ context.Context, _ order, r receipt, info idempotency.Info) receipt {
				hooks++
				r.OrderID += "+replayed"
				return r
			}})
		ctx := deadline(t, 30*time.Second)
		first, _, _ := f.Call(ctx, order{ID: "o-1", Amount: 5})
		e.reset()
		got, info, err := f.Call(ctx, order{ID: "o-1", Amount: 5, Note: "not validated"})
		if err != nil || !info.Replayed() || info.FromCache || got.Serial != first.Serial || got.OrderID != "o-1+replayed" || info.CompletedAt.IsZero() {
			t.Fatalf("repeat: %+v %+v %v", got, info, err)
		}
		if c.runs.Load() != 1 || hooks != 1 {
			t.Errorf("function ran %d times, hook %d times; want 1 and 1 (the hook only on replay)", c.runs.Load(), hooks)
		}
		if n := e.count(); n != 1 {
			t.Errorf("repeat made %d backend requests, want 1", n)
		}
		// Handle returns the same thing without the marker.
		if got, err := f.Handle(ctx, order{ID: "o-1", Amount: 5}); err != nil || got.Serial != 1 {
			t.Fatalf("Handle: %+v %v", got, err)
		}
	})
}

func TestConformanceRepeatFromLocalCache(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{CacheEntries: 8}, func(t *testing.T, e *env) {
		var c counted
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{ValidatePath: "amount"})
		ctx := deadline(t, 30*time.Second)
		f.Call(ctx, order{ID: "o-1", Amount: 5})
		e.reset()
		got, info, err := f.Call(ctx, order{ID: "o-1", Amount: 5})
		if err != nil || !info.Replayed() || !info.FromCache || got.Serial != 1 {
			t.Fatalf("cached repeat: %+v %+v %v", got, info, err)
		}
		if n := e.count(); n != 0 {
			t.Errorf("cached repeat made %d backend requests, want 0", n)
		}
		// The cache validates too: a tampered payload is refused, not replayed.
		if _, info, err := f.Call(ctx, order{ID: "o-1", Amount: 500}); !errors.Is(err, idempotency.ErrPayloadMismatch) || info.Outcome != idempotency.Mismatch {
			t.Fatalf("tampered payload against the cache: %+v %v", info, err)
		}
		// An expired entry is a miss: the function runs again.
		e.clock.Advance(idempotency.DefaultExpiry + time.Second)
		if got, info, err := f.Call(ctx, order{ID: "o-1", Amount: 5}); err != nil || info.Outcome != idempotency.Executed || got.Serial != 2 {
			t.Fatalf("after expiry: %+v %+v %v", got, info, err)
		}
	})
}

// TestConformanceInProgress: while one invocation runs, a duplicate fails
// fast with ErrInProgress and changes nothing; the in-progress record is
// never cached; once the first finishes, the duplicate replays.
func TestConformanceInProgress(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{CacheEntries: 8}, func(t *testing.T, e *env) {
		c := counted{block: make(chan struct{}), inside: make(chan struct{}, 1)}
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{})
		ctx := deadline(t, 30*time.Second)
		done := make(chan receipt)
		go func() {
			r, _, _ := f.Call(ctx, order{ID: "o-1"})
			done <- r
		}()
		<-c.inside
		before := record(t, e, "create-order", "o-1")
		for range 3 {
			_, info, err := f.Call(ctx, order{ID: "o-1"})
			if !errors.Is(err, idempotency.ErrInProgress) || info.Outcome != idempotency.InProgress || info.FromCache {
				t.Fatalf("duplicate while in progress: %+v %v", info, err)
			}
		}
		if after := record(t, e, "create-order", "o-1"); after.Version != before.Version || after.LeaseOwner != before.LeaseOwner {
			t.Fatalf("a refused duplicate changed the record: %+v → %+v", before, after)
		}
		close(c.block)
		first := <-done
		got, info, err := f.Call(ctx, order{ID: "o-1"})
		if err != nil || !info.Replayed() || got != first || c.runs.Load() != 1 {
			t.Fatalf("after the first finished: %+v %+v %v (runs %d)", got, info, err, c.runs.Load())
		}
	})
}

// TestConformanceWaitForInProgress: with Config.Wait, a duplicate waits for
// the holder and replays its result instead of failing.
func TestConformanceWaitForInProgress(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		c := counted{block: make(chan struct{}), inside: make(chan struct{}, 1)}
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{Wait: 20 * time.Second})
		ctx := deadline(t, 30*time.Second)
		done := make(chan receipt)
		go func() {
			r, _, _ := f.Call(ctx, order{ID: "o-1"})
			done <- r
		}()
		<-c.inside
		type res struct {
			r    receipt
			info idempotency.Info
			err  error
		}
		waiter := make(chan res)
		go func() {
			r, info, err := f.Call(ctx, order{ID: "o-1"})
			waiter <- res{r, info, err}
		}()
		time.Sleep(150 * time.Millisecond) // let the waiter start polling
		close(c.block)
		first := <-done
		w := <-waiter
		if w.err != nil || !w.info.Replayed() || w.r != first || c.runs.Load() != 1 {
			t.Fatalf("waiter: %+v %+v %v (runs %d)", w.r, w.info, w.err, c.runs.Load())
		}
	})
}

func TestConformanceWaitEndsWithErrInProgress(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		c := counted{block: make(chan struct{}), inside: make(chan struct{}, 1)}
		defer close(c.block)
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{Wait: 300 * time.Millisecond})
		ctx := deadline(t, 30*time.Second)
		go f.Call(ctx, order{ID: "o-1"})
		<-c.inside
		start := time.Now()
		_, info, err := f.Call(ctx, order{ID: "o-1"})
		if !errors.Is(err, idempotency.ErrInProgress) || info.Outcome != idempotency.InProgress {
			t.Fatalf("bounded wait: %+v %v", info, err)
		}
		if waited := time.Since(start); waited < 250*time.Millisecond {
			t.Errorf("gave up after %v, before the 300ms wait", waited)
		}
	})
}

// TestConformanceTimeoutLeaseLapses: the claim lasts as long as the
// invocation's remaining time (the context deadline) plus the lease
// margin, so an invocation that timed out blocks retries only until then,
// not for the expiry window; the retry runs as attempt 2.
func TestConformanceTimeoutLeaseLapses(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		leases := make(chan time.Time, 1)
		frozen := make(chan struct{})
		t.Cleanup(func() { close(frozen) })
		timedOut := func(ctx context.Context, o order) (receipt, error) {
			call, _ := idempotency.CallFrom(ctx)
			r, err := e.backend.Get(ctx, call.Key)
			if err != nil {
				t.Error(err)
			}
			leases <- r.LeaseUntil
			<-frozen // the invocation is frozen at its deadline and never returns
			return receipt{}, errors.New("frozen")
		}
		f := wrap(t, e, timedOut, idempotency.Config[order, receipt]{})
		go f.Call(deadline(t, 3*time.Second), order{ID: "o-1"})
		lease := <-leases
		now := e.clock.Now()
		if m := idempotency.DefaultLeaseMargin; lease.Before(now.Add(2*time.Second+m)) || lease.After(now.Add(3*time.Second+m)) {
			t.Fatalf("lease ends %v after now; want the context's ~3s remaining and the %v margin, not the expiry window", lease.Sub(now), m)
		}
		var c counted
		g := wrap(t, e, c.fn, idempotency.Config[order, receipt]{})
		if _, _, err := g.Call(deadline(t, 30*time.Second), order{ID: "o-1"}); !errors.Is(err, idempotency.ErrInProgress) {
			t.Fatalf("retry before the deadline: %v, want ErrInProgress", err)
		}
		e.clock.Advance(3*time.Second + idempotency.DefaultLeaseMargin)
		got, info, err := g.Call(deadline(t, 30*time.Second), order{ID: "o-1"})
		if err != nil || info.Outcome != idempotency.Executed || info.Attempt != 2 || got.Serial != 1 {
			t.Fatalf("retry after the deadline: %+v %+v %v", got, info, err)
		}
	})
}

func TestConformanceExpiredRunsAgain(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{Expiry: 10 * time.Minute}, func(t *testing.T, e *env) {
		var c counted
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{})
		ctx := deadline(t, 30*time.Second)
		f.Call(ctx, order{ID: "o-1"})
		e.clock.Advance(9 * time.Minute)
		if _, info, _ := f.Call(ctx, order{ID: "o-1"}); !info.Replayed() {
			t.Fatalf("inside the window: %+v", info)
		}
		e.clock.Advance(time.Minute)
		e.reset()
		got, info, err := f.Call(ctx, order{ID: "o-1"})
		if err != nil || info.Outcome != idempotency.Executed || info.Attempt != 1 || got.Serial != 2 {
			t.Fatalf("past the window (record not yet deleted by TTL): %+v %+v %v", got, info, err)
		}
		if n := e.count(); n != 2 {
			t.Errorf("re-run over an expired record made %d requests, want 2", n)
		}
	})
}

// TestConformancePayloadMismatch: a repeat whose validated fields differ
// is an error the caller can branch on; the record is not overwritten. The
// same payload with validation on replays (Powertools' Python cache layer
// once dropped the digest on completion and refused identical repeats).
func TestConformancePayloadMismatch(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		var c counted
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{ValidatePath: "amount, note"})
		ctx := deadline(t, 30*time.Second)
		f.Call(ctx, order{ID: "o-1", Amount: 5, Note: "gift"})
		before := record(t, e, "create-order", "o-1")
		_, info, err := f.Call(ctx, order{ID: "o-1", Amount: 6, Note: "gift"})
		if !errors.Is(err, idempotency.ErrPayloadMismatch) || info.Outcome != idempotency.Mismatch {
			t.Fatalf("mismatch: %+v %v", info, err)
		}
		if after := record(t, e, "create-order", "o-1"); after.Version != before.Version || after.Validation != before.Validation {
			t.Fatal("a mismatching repeat changed the record")
		}
		if got, info, err := f.Call(ctx, order{ID: "o-1", Amount: 5, Note: "gift"}); err != nil || !info.Replayed() || got.Serial != 1 {
			t.Fatalf("same payload with validation: %+v %+v %v", got, info, err)
		}
		if c.runs.Load() != 1 {
			t.Errorf("function ran %d times", c.runs.Load())
		}
	})
}

// TestConformanceHandlerError: an error is returned as the function
// returned it and is not cached: the record is failed (attempts and the
// error kept) and the next call runs again.
func TestConformanceHandlerError(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		boom := errors.New("payments API said 503")
		c := counted{err: boom}
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{})
		ctx := deadline(t, 30*time.Second)
		_, info, err := f.Call(ctx, order{ID: "o-1"})
		if !errors.Is(err, boom) || err.Error() != boom.Error() || info.Outcome != idempotency.Failed {
			t.Fatalf("handler error: %+v %v (want the function's own error)", info, err)
		}
		if n := e.count(); n != 2 {
			t.Errorf("failed call made %d requests, want 2 (claim, fail)", n)
		}
		r := record(t, e, "create-order", "o-1")
		if r.Status != idempotency.StatusFailed || r.LastError != boom.Error() || r.Attempts != 1 {
			t.Fatalf("failed record: %+v", r)
		}
		c.err = nil
		got, info, err := f.Call(ctx, order{ID: "o-1"})
		if err != nil || info.Outcome != idempotency.Executed || info.Attempt != 2 || got.Serial != 2 {
			t.Fatalf("retry after the error: %+v %+v %v", got, info, err)
		}
	})
}

func TestConformanceMaxAttemptsAndForget(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{MaxAttempts: 2}, func(t *testing.T, e *env) {
		c := counted{err: errors.New("nope")}
		f := wrap(t, e, c.fn, idempotency.Config[order, receipt]{})
		ctx := deadline(t, 30*time.Second)
		f.Call(ctx, order{ID: "o-1"})
		f.Call(ctx, order{ID: "o-1"})
		_, info, err := f.Call(ctx, order{ID: "o-1"})
		if !errors.Is(err, idempotency.ErrAttemptsExhausted) || info.Outcome != idempotency.Exhausted || c.runs.Load() != 2 || !strings.Contains(err.Error(), "nope") {
			t.Fatalf("third call: %+v %v (runs %d)", info, err, c.runs.Load())
		}
		if err := e.store.Forget(ctx, "create-order", "o-1"); err != nil {
			t.Fatal(err)
		}
		c.err = nil
		if got, info, err := f.Call(ctx, order{ID: "o-1"}); err != nil || info.Outcome != idempotency.Executed || info.Attempt != 1 || got.Serial != 3 {
			t.Fatalf("after Forget: %+v %+v %v", got, info, err)
		}
	})
}

func TestConformancePanicFailsTheCall(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		var runs atomic.Int32
		f := wrap(t, e, func(ctx context.Context, o order) (receipt, error) {
			if runs.Add(1) == 1 {
				panic("nil map")
			}
			return receipt{OrderID: o.ID}, nil
		}, idempotency.Config[order, receipt]{})
		ctx := deadline(t, 30*time.Second)
		func() {
			defer func() {
				if r := recover(); r != "nil map" {
					t.Fatalf("recovered %v, want the function's panic", r)
				}
			}()
			f.Call(ctx, order{ID: "o-1"})
		}()
		if r := record(t, e, "create-order", "o-1"); r.Status != idempotency.StatusFailed || !strings.Contains(r.LastError, "panic: nil map") {
			t.Fatalf("after a panic: %+v", r)
		}
		if _, info, err := f.Call(ctx, order{ID: "o-1"}); err != nil || info.Outcome != idempotency.Executed || info.Attempt != 2 {
			t.Fatalf("after the panic: %+v %v", info, err)
		}
	})
}

// TestConformanceConcurrentFirstCalls: many invocations with one new key
// at once run the function exactly once; the others replay (waiting) or
// get ErrInProgress (failing fast).
func TestConformanceConcurrentFirstCalls(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{0, 20 * time.Second} {
		each(t, idempotency.Options{}, func(t *testing.T, e *env) {
			var runs atomic.Int32
			f := wrap(t, e, func(ctx context.Context, o order) (receipt, error) {
				runs.Add(1)
				time.Sleep(50 * time.Millisecond)
				return receipt{OrderID: o.ID, Serial: 7}, nil
			}, idempotency.Config[order, receipt]{Wait: wait})
			ctx := deadline(t, 30*time.Second)
			const n = 20
			var wg sync.WaitGroup
			var executed, replayed, inProgress atomic.Int32
			start := make(chan struct{})
			for range n {
				wg.Go(func() {
					<-start
					r, info, err := f.Call(ctx, order{ID: "o-1"})
					switch {
					case err == nil && info.Outcome == idempotency.Executed && r.Serial == 7:
						executed.Add(1)
					case err == nil && info.Replayed() && r.Serial == 7:
						replayed.Add(1)
					case errors.Is(err, idempotency.ErrInProgress) && wait == 0:
						inProgress.Add(1)
					default:
						t.Errorf("call: %+v %+v %v", r, info, err)
					}
				})
			}
			close(start)
			wg.Wait()
			if runs.Load() != 1 || executed.Load() != 1 || executed.Load()+replayed.Load()+inProgress.Load() != n {
				t.Fatalf("wait %v: runs %d, executed %d, replayed %d, in progress %d", wait, runs.Load(), executed.Load(), replayed.Load(), inProgress.Load())
			}
			if wait > 0 && replayed.Load() != n-1 {
				t.Fatalf("with a wait every duplicate should replay: %d of %d", replayed.Load(), n-1)
			}
		})
	}
}

// TestConformanceMissingKey: no key is ErrNoKey before any request;
// OptionalKey runs the function without idempotency. 0 and false are keys.
func TestConformanceMissingKey(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := deadline(t, 30*time.Second)
		type in struct {
			ID any `json:"id"`
		}
		runs := 0
		fn := func(ctx context.Context, x in) (string, error) { runs++; return fmt.Sprint(x.ID), nil }
		req, _ := idempotency.Wrap(e.store, "op", fn, idempotency.Config[in, string]{KeyPath: "id"})
		opt, _ := idempotency.Wrap(e.store, "op", fn, idempotency.Config[in, string]{KeyPath: "id", OptionalKey: true})
		for _, id := range []any{nil, "", []any{}, map[string]any{}, []any{nil, ""}} {
			if _, info, err := req.Call(ctx, in{id}); !errors.Is(err, idempotency.ErrNoKey) || info.Outcome != idempotency.Errored {
				t.Errorf("required key %#v: %+v %v", id, info, err)
			}
			if _, info, err := opt.Call(ctx, in{id}); err != nil || info.Outcome != idempotency.Unkeyed || info.Key != "" {
				t.Errorf("optional key %#v: %+v %v", id, info, err)
			}
		}
		if runs != 5 || e.count() != 0 {
			t.Fatalf("runs %d (want 5, optional only), requests %d (want 0)", runs, e.count())
		}
		for _, id := range []any{0, false, "0"} {
			if _, info, err := req.Call(ctx, in{id}); err != nil || info.Outcome != idempotency.Executed {
				t.Errorf("falsy key %#v: %+v %v", id, info, err)
			}
		}
		keys := map[string]bool{}
		for _, id := range []any{0, false, "0"} {
			_, info, _ := req.Call(ctx, in{id})
			if !info.Replayed() {
				t.Errorf("falsy key %#v did not replay: %+v", id, info)
			}
			keys[info.Key] = true
		}
		if len(keys) != 3 {
			t.Errorf("0, false and \"0\" share keys: %v", keys)
		}
	})
}

// TestConformanceKeyIgnoresMutationAndSpelling: the key is taken before
// the function runs (it may change its input), and from the canonical
// form of the selection (member order, whitespace, 1 vs 1.0).
func TestConformanceKeyIgnoresMutationAndSpelling(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := deadline(t, 30*time.Second)
		runs := 0
		f, err := idempotency.Wrap(e.store, "api", func(ctx context.Context, ev map[string]any) (int, error) {
			runs++
			ev["body"] = `{"changed":true}`
			return runs, nil
		}, idempotency.Config[map[string]any, int]{KeyPath: "body.order"})
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{
			`{"order":{"id":"o-1","qty":1},"ts":1}`,
			`{ "ts": 2, "order": { "qty": 1.0, "id": "o-1" } }`,
		} {
			if got, _, err := f.Call(ctx, map[string]any{"body": body}); err != nil || got != 1 {
				t.Fatalf("body %s: %v %v", body, got, err)
			}
		}
		if runs != 1 {
			t.Fatalf("ran %d times for one key", runs)
		}
	})
}

// TestConformanceResultRoundTrips: zero, empty and nil results replay as
// they were returned.
func TestConformanceResultRoundTrips(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := deadline(t, 30*time.Second)
		check := func(name string, run func() (any, any, idempotency.Info)) {
			first, second, info := run()
			fj, _ := json.Marshal(first)
			sj, _ := json.Marshal(second)
			if !info.Replayed() || string(fj) != string(sj) {
				t.Errorf("%s: first %s, replay %s (%+v)", name, fj, sj, info)
			}
		}
		check("nil pointer", func() (any, any, idempotency.Info) {
			a, _, _ := idempotency.Do(ctx, e.store, "nil", "k", func(context.Context) (*receipt, error) { return nil, nil })
			b, info, _ := idempotency.Do(ctx, e.store, "nil", "k", func(context.Context) (*receipt, error) { return &receipt{OrderID: "x"}, nil })
			return a, b, info
		})
		check("empty string", func() (any, any, idempotency.Info) {
			a, _, _ := idempotency.Do(ctx, e.store, "str", "k", func(context.Context) (string, error) { return "", nil })
			b, info, _ := idempotency.Do(ctx, e.store, "str", "k", func(context.Context) (string, error) { return "x", nil })
			return a, b, info
		})
		check("zero struct", func() (any, any, idempotency.Info) {
			a, _, _ := idempotency.Do(ctx, e.store, "zero", "k", func(context.Context) (receipt, error) { return receipt{}, nil })
			b, info, _ := idempotency.Do(ctx, e.store, "zero", "k", func(context.Context) (receipt, error) { return receipt{Serial: 1}, nil })
			return a, b, info
		})
		check("false", func() (any, any, idempotency.Info) {
			a, _, _ := idempotency.Do(ctx, e.store, "bool", "k", func(context.Context) (bool, error) { return false, nil })
			b, info, _ := idempotency.Do(ctx, e.store, "bool", "k", func(context.Context) (bool, error) { return true, nil })
			return a, b, info
		})
	})
}

// TestConformanceResultTooLarge: a result that cannot fit a DynamoDB item
// is a typed error naming the limit, and the call is not run again by a
// repeat (its effects happened once); the record does not stay claimed.
func TestConformanceResultTooLarge(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := deadline(t, 30*time.Second)
		runs := 0
		noise := make([]byte, idempotency.MaxResultBytes*5/4)
		rand.Read(noise)
		big := func(context.Context) ([]byte, error) {
			runs++
			return noise, nil // base64 in JSON: 5/3 of the limit, about 5/4 after gzip
		}
		_, info, err := idempotency.Do(ctx, e.store, "report", "r-1", big)
		var ue *idempotency.UnstorableError
		if !errors.Is(err, idempotency.ErrResultTooLarge) || !errors.As(err, &ue) || ue.Limit != idempotency.MaxResultBytes ||
			!strings.Contains(err.Error(), fmt.Sprint(idempotency.MaxResultBytes)) || info.Outcome != idempotency.Executed || info.Stored {
			t.Fatalf("first: %+v %v", info, err)
		}
		_, info, err = idempotency.Do(ctx, e.store, "report", "r-1", big)
		if !errors.Is(err, idempotency.ErrResultTooLarge) || !info.Replayed() || runs != 1 || !errors.As(err, &ue) || !ue.Replayed {
			t.Fatalf("repeat: %+v %v (runs %d)", info, err, runs)
		}
		// A large result that compresses under the limit is stored.
		text := func(context.Context) (string, error) { return strings.Repeat("all work and no play ", 40000), nil }
		if _, info, err := idempotency.Do(ctx, e.store, "report", "r-2", text); err != nil || !info.Stored {
			t.Fatalf("compressible 840 KB: %+v %v", info, err)
		}
		if got, info, err := idempotency.Do(ctx, e.store, "report", "r-2", text); err != nil || !info.Replayed() || len(got) != 840000 {
			t.Fatalf("compressible replay: %d %+v %v", len(got), info, err)
		}
	})
}

// TestConformanceOperationsAreSeparate: one key under two operation names
// is two calls.
func TestConformanceOperationsAreSeparate(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := deadline(t, 30*time.Second)
		a, _, _ := idempotency.Do(ctx, e.store, "charge", "o-1", func(context.Context) (string, error) { return "charged", nil })
		b, info, _ := idempotency.Do(ctx, e.store, "email", "o-1", func(context.Context) (string, error) { return "emailed", nil })
		if a != "charged" || b != "emailed" || info.Outcome != idempotency.Executed {
			t.Fatalf("%q %q %+v", a, b, info)
		}
	})
}

// TestConformanceNoDeadline: outside Lambda the claim lasts
// Options.NoDeadlineLease.
func TestConformanceNoDeadline(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{NoDeadlineLease: 2 * time.Minute}, func(t *testing.T, e *env) {
		var lease time.Time
		idempotency.Do(context.Background(), e.store, "op", "k", func(ctx context.Context) (int, error) {
			call, _ := idempotency.CallFrom(ctx)
			r, _ := e.backend.Get(ctx, call.Key)
			lease = r.LeaseUntil
			return 1, nil
		})
		if want := e.clock.Now().Add(2 * time.Minute); !lease.Equal(want) {
			t.Fatalf("lease %v, want %v", lease, want)
		}
	})
}
