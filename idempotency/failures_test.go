package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/idempotency"
	"github.com/hookledger/hookledger/idempotency/idempotencytest"
)

// faulty fails the backend operations it is told to, with ErrUnavailable
// as the DynamoDB backend reports throttling and 5xx.
type faulty struct {
	idempotency.Backend
	claim, complete, fail bool
}

var errDown = errors.New("throttled")

func (f *faulty) Claim(ctx context.Context, k string, c idempotency.Claim) (idempotency.Record, bool, error) {
	if f.claim {
		return idempotency.Record{}, false, errors.Join(idempotency.ErrUnavailable, errDown)
	}
	return f.Backend.Claim(ctx, k, c)
}

func (f *faulty) Complete(ctx context.Context, k, tok string, r idempotency.Completion) (idempotency.Record, error) {
	if f.complete {
		return idempotency.Record{}, errors.Join(idempotency.ErrUnavailable, errDown)
	}
	return f.Backend.Complete(ctx, k, tok, r)
}

func (f *faulty) Fail(ctx context.Context, k, tok, cause string) error {
	if f.fail {
		return errors.Join(idempotency.ErrUnavailable, errDown)
	}
	return f.Backend.Fail(ctx, k, tok, cause)
}

func faultyStore(t *testing.T, e *env, f *faulty, opt idempotency.Options) *idempotency.Store {
	f.Backend = e.backend
	opt.Now = e.clock.Now
	if opt.Logger == nil {
		opt.Logger = quietLogger()
	}
	s, err := idempotency.NewStoreWith(f, opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformanceStoreFailures: the store failing before the call means
// the function does not run; failing after it, the function's result (or
// error) still reaches the caller, with the store's failure logged,
// counted and, for an error, joined to it.
func TestConformanceStoreFailures(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{}, func(t *testing.T, e *env) {
		ctx := deadline(t, 30*time.Second)
		f := &faulty{claim: true}
		var logs, emf bytes.Buffer
		s := faultyStore(t, e, f, idempotency.Options{Metrics: &emf, Logger: jsonLogger(&logs)})
		runs := 0
		ok := func(context.Context) (string, error) { runs++; return "done", nil }
		if _, info, err := idempotency.Do(ctx, s, "op", "k-1", ok); !errors.Is(err, idempotency.ErrUnavailable) || info.Outcome != idempotency.Errored || runs != 0 {
			t.Fatalf("claim failing: %+v %v (runs %d)", info, err, runs)
		}

		f.claim, f.complete = false, true
		got, info, err := idempotency.Do(ctx, s, "op", "k-2", ok)
		if err != nil || got != "done" || info.Outcome != idempotency.Executed || info.Stored {
			t.Fatalf("complete failing: %q %+v %v", got, info, err)
		}
		if !strings.Contains(logs.String(), "the result was not stored") || !strings.Contains(emf.String(), "IdempotencyNotStored") {
			t.Errorf("an unstored result went unreported: logs %s metrics %s", logs.String(), emf.String())
		}
		// The record stays claimed until the deadline, then runs again.
		if _, _, err := idempotency.Do(ctx, e.store, "op", "k-2", ok); !errors.Is(err, idempotency.ErrInProgress) {
			t.Fatalf("after an unstored result: %v", err)
		}

		f.complete, f.fail = false, true
		boom := errors.New("boom")
		_, info, err = idempotency.Do(ctx, s, "op", "k-3", func(context.Context) (string, error) { return "", boom })
		if !errors.Is(err, boom) || !errors.Is(err, idempotency.ErrUnavailable) || info.Outcome != idempotency.Failed {
			t.Fatalf("fail failing: %+v %v (want both errors)", info, err)
		}
	})
}

// TestConformanceLeaseLost: a call that outlives its claim, while another
// invocation takes the key over and completes it, keeps the other's
// result in the store and still returns its own (its effects happened),
// marked not stored.
func TestConformanceLeaseLost(t *testing.T) {
	t.Parallel()
	each(t, idempotency.Options{NoDeadlineLease: time.Minute}, func(t *testing.T, e *env) {
		ctx := context.Background()
		slow := func(ctx context.Context) (string, error) {
			e.clock.Advance(2 * time.Minute) // the claim lapses while it runs
			if got, info, err := idempotency.Do(ctx, e.store, "op", "k", func(context.Context) (string, error) { return "second", nil }); err != nil || got != "second" || info.Attempt != 2 {
				t.Errorf("take-over: %q %+v %v", got, info, err)
			}
			return "first", nil
		}
		got, info, err := idempotency.Do(ctx, e.store, "op", "k", slow)
		if err != nil || got != "first" || info.Stored {
			t.Fatalf("lapsed call: %q %+v %v", got, info, err)
		}
		if got, info, _ := idempotency.Do(ctx, e.store, "op", "k", func(context.Context) (string, error) { return "third", nil }); got != "second" || !info.Replayed() {
			t.Fatalf("stored result %q %+v, want the take-over's", got, info)
		}
	})
}

// TestDynamoDBUnavailable: SDK failures reach the caller as
// ErrUnavailable, never as SDK types, and nothing runs.
func TestDynamoDBUnavailable(t *testing.T) {
	t.Parallel()
	cfg := emulatorConfig(t)
	db := dynamodb.NewFromConfig(cfg)
	s, err := idempotency.NewStore(db, idempotency.Options{Table: uniqueName("no-such-table"), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	_, info, err := idempotency.Do(t.Context(), s, "op", "k", func(context.Context) (int, error) { runs++; return 1, nil })
	if !errors.Is(err, idempotency.ErrUnavailable) || runs != 0 || info.Outcome != idempotency.Errored {
		t.Fatalf("missing table: %+v %v (runs %d)", info, err, runs)
	}
}

// deadlines records the deadline of the last completion and failure write.
type deadlines struct {
	idempotency.Backend
	complete, fail time.Time
}

func (d *deadlines) Complete(ctx context.Context, k, tok string, r idempotency.Completion) (idempotency.Record, error) {
	d.complete, _ = ctx.Deadline()
	return d.Backend.Complete(ctx, k, tok, r)
}

func (d *deadlines) Fail(ctx context.Context, k, tok, cause string) error {
	d.fail, _ = ctx.Deadline()
	return d.Backend.Fail(ctx, k, tok, cause)
}

// TestWriteMayUseTheClaim: the completion or failure write may run as long
// as the claim holds, until the context's deadline plus LeaseMargin, and
// for LeaseMargin at least. It had 5 s from the function's return: under
// load, encoding a large result and a slow answer spent them, and the
// result went unstored (the SDK warning of a checksum, its read cut short).
func TestWriteMayUseTheClaim(t *testing.T) {
	t.Parallel()
	const margin = 7 * time.Second
	d := &deadlines{Backend: idempotencytest.NewMemory(time.Now)}
	s, err := idempotency.NewStoreWith(d, idempotency.Options{Logger: quietLogger(), LeaseMargin: margin})
	if err != nil {
		t.Fatal(err)
	}
	ctx := deadline(t, time.Hour)
	dl, _ := ctx.Deadline()
	ok := func(context.Context) (string, error) { return "r", nil }
	if _, _, err := idempotency.Do(ctx, s, "op", "ok", ok); err != nil || !d.complete.Equal(dl.Add(margin)) {
		t.Errorf("completion write until %v (%v), want the claim's end %v", d.complete, err, dl.Add(margin))
	}
	fail := func(context.Context) (string, error) { return "", errDown }
	if _, _, err := idempotency.Do(ctx, s, "op", "fail", fail); !errors.Is(err, errDown) || !d.fail.Equal(dl.Add(margin)) {
		t.Errorf("failure write until %v (%v), want the claim's end %v", d.fail, err, dl.Add(margin))
	}
	// No deadline: LeaseMargin from the function's return.
	before := time.Now()
	if _, _, err := idempotency.Do(t.Context(), s, "op", "no-deadline", ok); err != nil ||
		d.complete.Before(before.Add(margin)) || d.complete.After(time.Now().Add(margin)) {
		t.Errorf("completion write without a deadline until %v (%v), want %v from the function's return", d.complete, err, margin)
	}
}
