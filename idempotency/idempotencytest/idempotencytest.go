// Package idempotencytest helps unit-test code that uses package
// idempotency without AWS: an in-memory Backend with the DynamoDB
// backend's semantics (claims, leases, attempts, expiry, the result size
// limit), a Store on it with a settable clock, and a view of what was
// stored.
//
//	s := idempotencytest.NewStore(t, idempotency.Options{})
//	f, _ := idempotency.Wrap(s.Store, "create-order", createOrder, cfg)
//	f.Handle(ctx, req)
//	_, info, _ := f.Call(ctx, req) // info.Replayed() == true
//	s.Advance(2 * time.Hour)       // the record expires
//
// To run code without idempotency at all, pass idempotency.NewDisabled().
// The package's conformance suite runs against Memory as well as DynamoDB,
// so what passes here behaves the same against the table.
package idempotencytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookledger/hookledger/dynamo"
	"github.com/hookledger/hookledger/idempotency"
)

// Memory is an in-memory idempotency.Backend. Safe for concurrent use.
type Memory struct {
	now func() time.Time

	mu       sync.Mutex
	recs     map[string]idempotency.Record
	requests map[string]int
}

var _ idempotency.Backend = (*Memory)(nil)

// NewMemory returns an empty backend on the clock now (time.Now if nil).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, recs: map[string]idempotency.Record{}, requests: map[string]int{}}
}

func checkKey(key string) error {
	if key == "" || len(key) > idempotency.MaxKeyBytes {
		return fmt.Errorf("%w: call key of %d bytes", idempotency.ErrInvalid, len(key))
	}
	return nil
}

func ms(t time.Time) time.Time { return t.Truncate(time.Millisecond) }

// Claim implements idempotency.Backend.
func (m *Memory) Claim(_ context.Context, key string, c idempotency.Claim) (idempotency.Record, bool, error) {
	if err := checkKey(key); err != nil {
		return idempotency.Record{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests["Claim"]++
	now := m.now()
	if !c.LeaseUntil.After(now) || !c.ExpiresAt.After(now) {
		return idempotency.Record{}, false, fmt.Errorf("%w: claim of %s: lease end and expiry must be after now", idempotency.ErrInvalid, key)
	}
	old, ok := m.recs[key]
	// The window, but never before the lease ends (whole seconds, rounded
	// up), as the DynamoDB backend writes it: a claim outlives a window
	// shorter than the invocation. Expired also never holds for a record
	// in progress under a live lease.
	lease := c.LeaseUntil.Unix()
	if c.LeaseUntil.After(time.Unix(lease, 0)) {
		lease++
	}
	exp := time.Unix(max(c.ExpiresAt.Unix(), lease), 0).UTC()
	if !ok || old.Expired(now) {
		r := idempotency.Record{Key: key, Status: idempotency.StatusInProgress, Attempts: 1, LeaseOwner: dynamo.NewToken(),
			LeaseUntil: ms(c.LeaseUntil), CreatedAt: ms(now), UpdatedAt: ms(now), ExpiresAt: exp, Validation: c.Validation, Version: 1}
		m.recs[key] = r
		return r, true, nil
	}
	takeable := (old.Status == idempotency.StatusInProgress && !now.Before(old.LeaseUntil)) ||
		(old.Status == idempotency.StatusFailed && (c.MaxAttempts <= 0 || old.Attempts < c.MaxAttempts))
	if c.Validation != "" && old.Validation != "" && c.Validation != old.Validation {
		takeable = false // the key stays with the payload it was first used with
	}
	if !takeable {
		return copyRecord(old), false, nil
	}
	r := old
	r.Status, r.LeaseOwner, r.LeaseUntil = idempotency.StatusInProgress, dynamo.NewToken(), ms(c.LeaseUntil)
	r.Attempts++
	r.UpdatedAt, r.ExpiresAt, r.Version = ms(now), exp, r.Version+1
	r.Result, r.ResultSize, r.StoredSize, r.Unstored = nil, 0, 0, ""
	if c.Validation != "" {
		r.Validation = c.Validation
	}
	m.recs[key] = r
	return copyRecord(r), true, nil
}

func copyRecord(r idempotency.Record) idempotency.Record {
	r.Result = slices.Clone(r.Result)
	return r
}

// owned checks, as the DynamoDB backend does, only that the record is in
// progress under token: a holder completes its call even after the window
// (or its lease) has passed, as long as no one took the key over.
func (m *Memory) owned(key, token string) (idempotency.Record, error) {
	r, ok := m.recs[key]
	if !ok {
		return r, fmt.Errorf("%s: %w (record gone)", key, idempotency.ErrLeaseLost)
	}
	if r.Status != idempotency.StatusInProgress || r.LeaseOwner != token {
		return r, fmt.Errorf("%s: %w (now %s, attempt %d)", key, idempotency.ErrLeaseLost, r.Status, r.Attempts)
	}
	return r, nil
}

// Complete implements idempotency.Backend.
func (m *Memory) Complete(_ context.Context, key, token string, c idempotency.Completion) (idempotency.Record, error) {
	if err := checkKey(key); err != nil {
		return idempotency.Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests["Complete"]++
	r, err := m.owned(key, token)
	if err != nil {
		return idempotency.Record{}, err
	}
	now := m.now()
	stored := len(c.Data)
	unstored := c.Unstored
	if unstored == "" && len(c.Data) > idempotency.MaxResultDecodedBytes {
		unstored = fmt.Sprintf("result of %d bytes is over the %d-byte limit of a result before compression", len(c.Data), idempotency.MaxResultDecodedBytes)
	}
	if unstored == "" {
		if z, ok := dynamo.Shrink(c.Data, 512); ok {
			stored = len(z)
		}
	}
	if unstored == "" && stored > idempotency.MaxResultBytes {
		unstored = fmt.Sprintf("result of %d bytes (%d stored) is over the %d-byte limit of a DynamoDB item", len(c.Data), stored, idempotency.MaxResultBytes)
	}
	r.Status, r.UpdatedAt, r.ExpiresAt, r.Version = idempotency.StatusCompleted, ms(now), time.Unix(c.ExpiresAt.Unix(), 0).UTC(), r.Version+1
	r.LeaseUntil, r.ResultSize, r.StoredSize = time.Time{}, len(c.Data), stored
	if unstored != "" {
		r.Result, r.Unstored = nil, unstored
	} else {
		r.Result, r.Unstored = slices.Clone(c.Data), ""
	}
	m.recs[key] = r
	return copyRecord(r), nil
}

// Fail implements idempotency.Backend.
func (m *Memory) Fail(_ context.Context, key, token, cause string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests["Fail"]++
	r, err := m.owned(key, token)
	if err != nil {
		return err
	}
	if len(cause) > 256 {
		cause = cause[:256]
	}
	r.Status, r.UpdatedAt, r.LeaseUntil, r.LastError, r.Version = idempotency.StatusFailed, ms(m.now()), time.Time{}, strings.ToValidUTF8(cause, "?"), r.Version+1
	m.recs[key] = r
	return nil
}

// Get implements idempotency.Backend.
func (m *Memory) Get(_ context.Context, key string) (idempotency.Record, error) {
	if err := checkKey(key); err != nil {
		return idempotency.Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests["Get"]++
	r, ok := m.recs[key]
	if !ok || r.Expired(m.now()) {
		return idempotency.Record{}, fmt.Errorf("get %s: %w", key, idempotency.ErrNotFound)
	}
	return copyRecord(r), nil
}

// Forget ends key's window now (Store.Forget).
func (m *Memory) Forget(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests["Forget"]++
	r, ok := m.recs[key]
	if !ok {
		return fmt.Errorf("forget %s: %w", key, idempotency.ErrNotFound)
	}
	r.ExpiresAt = time.Unix(m.now().Unix(), 0).UTC()
	m.recs[key] = r
	return nil
}

// Records returns every stored record (expired ones included, as DynamoDB
// keeps them until TTL deletes them), sorted by key.
func (m *Memory) Records() []idempotency.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]idempotency.Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, copyRecord(r))
	}
	slices.SortFunc(out, func(a, b idempotency.Record) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Requests counts the backend calls made, by method (Claim, Complete, Fail,
// Get, Forget): what the DynamoDB backend would send as requests, one each
// (a take-over claim costs one more there).
func (m *Memory) Requests() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.requests))
	for k, v := range m.requests {
		out[k] = v
	}
	return out
}

// Store is an idempotency.Store on Memory with a settable clock.
type Store struct {
	*idempotency.Store
	Memory *Memory

	mu  sync.Mutex
	now time.Time
}

// NewStore returns a store on a fresh Memory. Unless opt.Now is set, the
// store runs on its own clock, starting at the current time, that only
// Advance moves (leases taken from a context deadline still follow the
// wall clock's remaining time). opt.Logger defaults to the test's log.
func NewStore(t testing.TB, opt idempotency.Options) *Store {
	t.Helper()
	s := &Store{now: time.Now().UTC()}
	if opt.Now == nil {
		opt.Now = s.clock
	}
	if opt.Logger == nil {
		opt.Logger = testLogger(t)
	}
	s.Memory = NewMemory(opt.Now)
	st, err := idempotency.NewStoreWith(s.Memory, opt)
	if err != nil {
		t.Fatalf("idempotencytest: %v", err)
	}
	s.Store = st
	return s
}

func (s *Store) clock() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the store's clock (when NewStore made it): past a
// record's expiry to see it run afresh, past a lease to see it taken over.
func (s *Store) Advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
}

// Record returns the stored record of operation's call with this key
// material; false when there is none.
func (s *Store) Record(operation string, key any) (idempotency.Record, bool) {
	k, err := idempotency.KeyOf(operation, key)
	if err != nil {
		return idempotency.Record{}, false
	}
	for _, r := range s.Memory.Records() {
		if r.Key == k {
			return r, true
		}
	}
	return idempotency.Record{}, false
}
