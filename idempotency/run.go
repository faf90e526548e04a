package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
)

// Outcome is what became of one call.
type Outcome string

// The outcomes, each counted as the metric named after it.
const (
	// Executed: the function ran and (Info.Stored) its result was stored.
	// Metric IdempotencyMiss.
	Executed Outcome = "executed"
	// Replayed: a stored result was returned without running the function.
	// Metric IdempotencyHit (and IdempotencyCacheHit from the local cache).
	Replayed Outcome = "replayed"
	// InProgress: another invocation holds the key (ErrInProgress). Metric
	// IdempotencyInProgress.
	InProgress Outcome = "in_progress"
	// Mismatch: same key, different payload (ErrPayloadMismatch). Metric
	// IdempotencyMismatch.
	Mismatch Outcome = "mismatch"
	// Failed: the function returned an error or panicked; the record is
	// failed and the next call runs it again. Metric IdempotencyFailed.
	Failed Outcome = "failed"
	// Exhausted: the call failed Options.MaxAttempts times
	// (ErrAttemptsExhausted). Metric IdempotencyExhausted.
	Exhausted Outcome = "exhausted"
	// Unkeyed: the input had no key and Config.OptionalKey let the function
	// run without idempotency. Metric IdempotencyUnkeyed.
	Unkeyed Outcome = "unkeyed"
	// Disabled: the store is disabled; the function ran directly.
	Disabled Outcome = "disabled"
	// Errored: the call could not be made idempotent: no key (ErrNoKey),
	// the store unavailable, a stored result that does not decode. The
	// function did not run. Metric IdempotencyError.
	Errored Outcome = "error"
)

var metricName = map[Outcome]string{
	Executed: "IdempotencyMiss", Replayed: "IdempotencyHit", InProgress: "IdempotencyInProgress",
	Mismatch: "IdempotencyMismatch", Failed: "IdempotencyFailed", Exhausted: "IdempotencyExhausted",
	Unkeyed: "IdempotencyUnkeyed", Errored: "IdempotencyError",
}

// Info describes one call: the marker that tells a replayed result from a
// fresh one.
type Info struct {
	Outcome Outcome
	// Key is the stored key, "operation#digest" (empty when unkeyed or
	// disabled).
	Key string
	// Attempt is the attempt that ran the function (Executed, Failed), or
	// that produced the replayed result (Replayed).
	Attempt int
	// FromCache: replayed from this process's local cache, no request made.
	FromCache bool
	// Stored: the fresh result was stored for repeats. False after
	// Executed means the store could not be written (logged, and counted
	// as IdempotencyNotStored); the result is still returned, since the
	// function's effects have happened.
	Stored bool
	// CompletedAt is when the replayed result was stored.
	CompletedAt time.Time
}

// Replayed reports whether the result came from the store rather than
// from running the function.
func (i Info) Replayed() bool { return i.Outcome == Replayed }

// Call describes the call in progress to the function it runs.
type Call struct {
	Operation string
	// Key is the stored key. It is stable across retries of the same
	// input: pass it (or something derived from it) as the idempotency key
	// of downstream APIs (Stripe's Idempotency-Key, say), so that a retry
	// after a crash between their effect and the store repeats nothing.
	Key string
	// Attempt counts the runs of this call in its window, from 1: above 1,
	// an earlier run failed, crashed or timed out.
	Attempt int
}

type callKey struct{}

// CallFrom returns the call the function was invoked for; false outside a
// wrapped function (or when unkeyed or disabled).
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// spec is one call as the wrappers prepared it.
type spec struct {
	op       string
	key      string // operation#digest; "" when the input had no key
	valid    string // validation digest, or ""
	optional bool   // run without idempotency when there is no key
	wait     time.Duration
	expiry   time.Duration
}

// Crash points (proof builds only; see crash_on.go).
const (
	crashAfterClaim = "idempotency.after_claim"
	crashAfterCall  = "idempotency.after_call"
)

func execute[Out any](ctx context.Context, s *Store, sp spec, fn func(context.Context) (Out, error)) (out Out, info Info, err error) {
	if s == nil {
		return out, Info{Outcome: Errored}, fmt.Errorf("%w: nil *Store", ErrInvalid)
	}
	defer func() { s.observe(ctx, sp, info, err) }()
	if s.opt.Disabled {
		info.Outcome = Disabled
		out, err = fn(ctx)
		return out, info, err
	}
	if sp.key == "" {
		if !sp.optional {
			return out, Info{Outcome: Errored}, fmt.Errorf("idempotency %s: %w", sp.op, ErrNoKey)
		}
		info.Outcome = Unkeyed
		out, err = fn(ctx)
		return out, info, err
	}
	info.Key = sp.key
	if sp.expiry == 0 {
		sp.expiry = s.opt.Expiry
	}
	if s.cache != nil {
		if rec, ok := s.cache.get(sp.key, s.opt.Now()); ok {
			return settle[Out](s, sp, rec, true)
		}
	}
	var waitUntil time.Time
	if sp.wait > 0 {
		waitUntil = time.Now().Add(sp.wait)
		if dl, ok := ctx.Deadline(); ok && dl.Before(waitUntil) {
			waitUntil = dl
		}
	}
	backoff := 20 * time.Millisecond
	for {
		lease, lerr := s.leaseUntil(ctx)
		if lerr != nil {
			return out, Info{Outcome: Errored, Key: sp.key}, fmt.Errorf("idempotency %s: %w", sp.op, lerr)
		}
		// The claim's window lasts at least as long as its lease: with an
		// expiry shorter than the invocation, a window ending first would
		// let the next caller (and TTL) treat a running call as gone.
		// Completion sets the real window.
		exp := s.opt.Now().Add(sp.expiry)
		if lease.After(exp) {
			exp = lease
		}
		rec, claimed, cerr := s.backend.Claim(ctx, sp.key, Claim{
			LeaseUntil: lease, ExpiresAt: exp, Validation: sp.valid, MaxAttempts: s.opt.MaxAttempts,
		})
		if cerr != nil {
			return out, Info{Outcome: Errored, Key: sp.key}, fmt.Errorf("idempotency %s: claim %s: %w", sp.op, sp.key, cerr)
		}
		if claimed {
			crash(crashAfterClaim)
			return run(ctx, s, sp, rec, fn)
		}
		if rec.Status != StatusInProgress || waitUntil.IsZero() {
			return settle[Out](s, sp, rec, false)
		}
		// Another invocation holds the key: poll (consistent reads) until it
		// finishes, its claim lapses, or the wait ends.
		for {
			if sp.valid != "" && rec.Validation != "" && rec.Validation != sp.valid {
				return settle[Out](s, sp, rec, false) // a mismatch does not wait
			}
			pause := min(backoff, time.Until(waitUntil))
			if until := rec.LeaseUntil.Sub(s.opt.Now()); until > 0 && until < pause {
				pause = until
			}
			if pause <= 0 {
				return settle[Out](s, sp, rec, false)
			}
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return out, Info{Outcome: InProgress, Key: sp.key}, fmt.Errorf("idempotency %s: %s: %w (%w while waiting)", sp.op, sp.key, ErrInProgress, ctx.Err())
			case <-t.C:
			}
			backoff = min(backoff*2, 500*time.Millisecond)
			next, gerr := s.backend.Get(ctx, sp.key)
			if errors.Is(gerr, ErrNotFound) {
				break // gone or expired (never while its lease is live): claim it
			}
			if gerr != nil {
				return out, Info{Outcome: Errored, Key: sp.key}, fmt.Errorf("idempotency %s: wait for %s: %w", sp.op, sp.key, gerr)
			}
			rec = next
			if rec.Status != StatusInProgress || !s.opt.Now().Before(rec.LeaseUntil) {
				if rec.Status == StatusCompleted {
					return settle[Out](s, sp, rec, false)
				}
				break // failed or lapsed: claim it
			}
		}
	}
}

// settle answers from a record another invocation wrote: replay, in
// progress, mismatch or exhausted.
func settle[Out any](s *Store, sp spec, rec Record, fromCache bool) (out Out, info Info, err error) {
	info = Info{Key: sp.key, Attempt: rec.Attempts, FromCache: fromCache}
	// Validate before anything else, the cached record included (a cache
	// must not turn a tampered payload into a replay).
	if sp.valid != "" && rec.Validation != "" && rec.Validation != sp.valid {
		info.Outcome = Mismatch
		return out, info, fmt.Errorf("idempotency %s: %s: %w", sp.op, sp.key, ErrPayloadMismatch)
	}
	switch rec.Status {
	case StatusCompleted:
		info.Outcome, info.CompletedAt = Replayed, rec.UpdatedAt
		if rec.Unstored != "" {
			return out, info, &UnstorableError{Operation: sp.op, Key: sp.key, Reason: rec.Unstored, Size: rec.ResultSize,
				Stored: rec.StoredSize, Limit: MaxResultBytes, Replayed: true}
		}
		if err := json.Unmarshal(rec.Result, &out); err != nil {
			info.Outcome = Errored
			return out, info, fmt.Errorf("idempotency %s: %w: the stored result of %s does not decode into %T (did the result type change? Forget the key or wait for it to expire): %w", sp.op, ErrCorruptResult, sp.key, out, err)
		}
		if s.cache != nil && !fromCache {
			s.cache.put(rec)
		}
		return out, info, nil
	case StatusInProgress:
		info.Outcome = InProgress
		return out, info, fmt.Errorf("idempotency %s: %s (attempt %d, claimed until %s): %w", sp.op, sp.key, rec.Attempts, rec.LeaseUntil.Format(time.RFC3339Nano), ErrInProgress)
	case StatusFailed:
		info.Outcome = Exhausted
		return out, info, fmt.Errorf("idempotency %s: %s failed %d times, last: %s: %w", sp.op, sp.key, rec.Attempts, rec.LastError, ErrAttemptsExhausted)
	}
	info.Outcome = Errored
	return out, info, fmt.Errorf("idempotency %s: %s has unknown status %q", sp.op, sp.key, rec.Status)
}

// run runs the function under a claim and records what it returned.
func run[Out any](ctx context.Context, s *Store, sp spec, claim Record, fn func(context.Context) (Out, error)) (out Out, info Info, err error) {
	info = Info{Key: sp.key, Attempt: claim.Attempts}
	token := claim.LeaseOwner
	var panicked any
	var stack []byte
	func() {
		defer func() {
			if r := recover(); r != nil {
				panicked, stack = r, debug.Stack()
			}
		}()
		out, err = fn(context.WithValue(ctx, callKey{}, Call{Operation: sp.op, Key: sp.key, Attempt: claim.Attempts}))
	}()
	wctx, cancel := s.writeContext(ctx)
	defer cancel()
	if panicked != nil {
		cause := fmt.Sprintf("panic: %v", panicked)
		if ferr := s.backend.Fail(wctx, sp.key, token, cause); ferr != nil {
			s.log.Error("idempotency: recording a panic failed", "operation", sp.op, "idempotency_key", sp.key, "error", ferr.Error())
		}
		s.log.Error("idempotency: the function panicked; the call is failed and runs again on the next call",
			"operation", sp.op, "idempotency_key", sp.key, "attempt", claim.Attempts, "panic", fmt.Sprint(panicked), "stack", string(stack))
		info.Outcome = Failed
		s.observe(ctx, sp, info, errors.New(cause))
		panic(panicked)
	}
	if err != nil {
		info.Outcome = Failed
		if ferr := s.backend.Fail(wctx, sp.key, token, err.Error()); ferr != nil {
			// The record stays in progress until its claim lapses (the
			// deadline), then the next call runs it again.
			s.log.Error("idempotency: recording the failure failed; the key stays claimed until its deadline",
				"operation", sp.op, "idempotency_key", sp.key, "attempt", claim.Attempts, "error", ferr.Error())
			return out, info, errors.Join(err, fmt.Errorf("idempotency %s: record failure of %s: %w", sp.op, sp.key, ferr))
		}
		return out, info, err
	}
	crash(crashAfterCall)
	info.Outcome = Executed
	data, merr := json.Marshal(out)
	comp := Completion{Data: data, ExpiresAt: s.opt.Now().Add(sp.expiry)}
	if merr != nil {
		comp = Completion{Unstored: "result does not encode as JSON: " + merr.Error(), ExpiresAt: comp.ExpiresAt}
	}
	rec, cerr := s.backend.Complete(wctx, sp.key, token, comp)
	switch {
	case cerr != nil:
		// The function's effects have happened: answering an error would
		// invite a retry that runs them again once the claim lapses. Return
		// the result, and say loudly that it was not stored.
		s.log.Error("idempotency: the result was not stored; a repeat after the claim lapses runs the function again",
			"operation", sp.op, "idempotency_key", sp.key, "attempt", claim.Attempts, "error", cerr.Error())
		return out, info, nil
	case rec.Unstored != "":
		info.Stored = false
		return out, info, &UnstorableError{Operation: sp.op, Key: sp.key, Reason: rec.Unstored, Size: rec.ResultSize,
			Stored: rec.StoredSize, Limit: MaxResultBytes}
	}
	info.Stored = true
	rec.Status, rec.Attempts, rec.Validation = StatusCompleted, claim.Attempts, claim.Validation
	if rec.UpdatedAt.IsZero() {
		rec.UpdatedAt = s.opt.Now()
	}
	if s.cache != nil {
		s.cache.put(rec)
	}
	return out, info, nil
}

// writeContext bounds the completion or failure write, which runs even
// when the call's context is done (its effects have happened). It may run
// while the claim holds: until the context's deadline plus LeaseMargin, and
// for LeaseMargin at least.
func (s *Store) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	end := time.Now().Add(s.opt.LeaseMargin)
	if dl, ok := ctx.Deadline(); ok && dl.Add(s.opt.LeaseMargin).After(end) {
		end = dl.Add(s.opt.LeaseMargin)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}

// leaseUntil is when the claim lapses: the context's deadline (the
// Lambda's remaining time) plus the margin, by the store's clock.
func (s *Store) leaseUntil(ctx context.Context) (time.Time, error) {
	now := s.opt.Now()
	dl, ok := ctx.Deadline()
	if !ok {
		if s.warned.CompareAndSwap(false, true) {
			s.log.Warn("idempotency: the context has no deadline; claims last Options.NoDeadlineLease",
				"no_deadline_lease", s.opt.NoDeadlineLease.String())
		}
		return now.Add(s.opt.NoDeadlineLease), nil
	}
	rem := time.Until(dl)
	if rem <= 0 {
		return time.Time{}, fmt.Errorf("the context's deadline has passed: %w", context.DeadlineExceeded)
	}
	return now.Add(rem + s.opt.LeaseMargin), nil
}

// observe logs, counts and reports one call.
func (s *Store) observe(ctx context.Context, sp spec, info Info, err error) {
	if info.Outcome == "" {
		return
	}
	level := slog.LevelDebug
	switch info.Outcome {
	case InProgress, Mismatch, Exhausted, Unkeyed:
		level = slog.LevelInfo
	case Errored:
		level = slog.LevelWarn
	}
	if s.log.Enabled(ctx, level) {
		attrs := []any{"operation", sp.op, "outcome", string(info.Outcome), "attempt", info.Attempt}
		if info.Key != "" {
			attrs = append(attrs, "idempotency_key", info.Key)
		}
		if info.FromCache {
			attrs = append(attrs, "from_cache", true)
		}
		if info.Outcome == Executed {
			attrs = append(attrs, "stored", info.Stored)
		}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		s.log.Log(ctx, level, "idempotency", attrs...)
	}
	if s.emf != nil {
		var names []string
		if n, ok := metricName[info.Outcome]; ok {
			names = append(names, n)
		}
		if info.FromCache && info.Outcome == Replayed {
			names = append(names, "IdempotencyCacheHit")
		}
		if info.Outcome == Executed && !info.Stored {
			names = append(names, "IdempotencyNotStored")
		}
		s.emf.Count(map[string]string{"Operation": sp.op}, names...)
	}
	if s.opt.OnOutcome != nil {
		s.opt.OnOutcome(ctx, sp.op, info, err)
	}
}
