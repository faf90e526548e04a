package idempotency_test

// The DynamoDB backend's own tests, against the emulator: request budgets,
// take-overs, expiry, size limits, writes whose answer was lost,
// contention, and the fallbacks for endpoints that omit the old item. The
// conformance suite covers the behaviour through a Store; these pin the
// backend underneath.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/idempotency"
)

// dynFixture is a DynamoDB backend on a fresh table, on a fake clock,
// behind a request meter.
type dynFixture struct {
	b      idempotency.Backend
	forget func(ctx context.Context, key string) error
	clock  *testClock
	meter  *meter
	db     *dynamodb.Client // metered
	table  string
	with   func(db idempotency.API) idempotency.Backend // another backend on the same table and clock
}

func dynSetup(t *testing.T) dynFixture {
	t.Helper()
	m := newMeter()
	cfg := emulatorConfig(t, m.APIOption)
	db := dynamodb.NewFromConfig(cfg)
	table := uniqueName("idem-dyn")
	if err := idempotency.CreateTable(t.Context(), db, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}) })
	c := newClock(time.Now().UTC().Truncate(time.Millisecond))
	with := func(api idempotency.API) idempotency.Backend {
		s, err := idempotency.NewStore(api, idempotency.Options{Table: table, Now: c.Now, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		return s.Backend()
	}
	b := with(db)
	m.Reset()
	return dynFixture{b: b, forget: forgetter(t, b), clock: c, meter: m, db: db, table: table, with: with}
}

// forgetter is b's Forget (Store.Forget's way in).
func forgetter(t *testing.T, b idempotency.Backend) func(context.Context, string) error {
	t.Helper()
	f, ok := b.(interface {
		Forget(ctx context.Context, key string) error
	})
	if !ok {
		t.Fatalf("%T cannot forget", b)
	}
	return f.Forget
}

func dynClaim(f dynFixture, lease time.Duration) idempotency.Claim {
	now := f.clock.Now()
	return idempotency.Claim{LeaseUntil: now.Add(lease), ExpiresAt: now.Add(time.Hour), Validation: "v1"}
}

func dynClaimed(t *testing.T, f dynFixture, key string) idempotency.Record {
	t.Helper()
	c, claimed, err := f.b.Claim(t.Context(), key, dynClaim(f, time.Minute))
	if err != nil || !claimed {
		t.Fatalf("claim %s: claimed=%v err=%v", key, claimed, err)
	}
	return c
}

func dynDone(f dynFixture, data string) idempotency.Completion {
	return idempotency.Completion{Data: []byte(data), ExpiresAt: f.clock.Now().Add(time.Hour)}
}

// noOld drops the old item from a refused PutItem, as endpoints that
// ignore ReturnValuesOnConditionCheckFailure do.
type noOld struct{ *dynamodb.Client }

func (c noOld) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.Client.PutItem(ctx, in, o...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ccf.Item = nil
	}
	return out, err
}

// lostUpdate sends every UpdateItem twice and returns the second answer:
// the SDK's retry of a write whose first answer was lost.
type lostUpdate struct{ *dynamodb.Client }

func (c lostUpdate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if _, err := c.Client.UpdateItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return c.Client.UpdateItem(ctx, in, o...)
}

// TestDynamoDBLifecycle pins the request budget: a first call is one PutItem
// and one UpdateItem; a repeat is one failed PutItem that brings the stored
// result back, with no read.
func TestDynamoDBLifecycle(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#abc"
	c := dynClaimed(t, f, key)
	if c.Status != idempotency.StatusInProgress || c.Attempts != 1 || c.LeaseOwner == "" || c.Validation != "v1" {
		t.Fatalf("claim gave %+v", c)
	}
	if _, err := f.b.Complete(ctx, key, c.LeaseOwner, dynDone(f, `{"order":"o-1"}`)); err != nil {
		t.Fatal(err)
	}
	if snap := f.meter.Snapshot(); len(snap) != 2 || snap["DynamoDB.PutItem"] != 1 || snap["DynamoDB.UpdateItem"] != 1 {
		t.Errorf("first call cost %v, want one PutItem and one UpdateItem", snap)
	}
	f.meter.Reset()
	old, claimed, err := f.b.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || claimed {
		t.Fatalf("repeat: claimed=%v err=%v", claimed, err)
	}
	if old.Status != idempotency.StatusCompleted || string(old.Result) != `{"order":"o-1"}` || old.Attempts != 1 || old.Validation != "v1" || old.LeaseOwner != c.LeaseOwner {
		t.Fatalf("repeat saw %+v", old)
	}
	if snap := f.meter.Snapshot(); len(snap) != 1 || snap["DynamoDB.PutItem"] != 1 {
		t.Errorf("repeat cost %v, want exactly one PutItem", snap)
	}
}

func TestDynamoDBClaimRefusedWhileLeased(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	key := uniqueName("op") + "#k"
	c := dynClaimed(t, f, key)
	old, claimed, err := f.b.Claim(t.Context(), key, dynClaim(f, time.Minute))
	if err != nil || claimed || old.Status != idempotency.StatusInProgress || old.LeaseOwner != c.LeaseOwner {
		t.Fatalf("second claim: %+v claimed=%v err=%v", old, claimed, err)
	}
}

// TestDynamoDBTakeOverAfterLapse is the crash or timeout case: the lease ends,
// the next claim runs the call as attempt 2, and the lapsed caller's late
// completion is refused.
func TestDynamoDBTakeOverAfterLapse(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#k"
	first := dynClaimed(t, f, key)
	f.clock.Advance(time.Minute)
	f.meter.Reset()
	second, claimed, err := f.b.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || !claimed || second.Attempts != 2 || second.LeaseOwner == first.LeaseOwner {
		t.Fatalf("take-over: %+v claimed=%v err=%v", second, claimed, err)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.PutItem"] != 1 || snap["DynamoDB.UpdateItem"] != 1 || len(snap) != 2 {
		t.Errorf("take-over cost %v, want one failed PutItem and one UpdateItem", snap)
	}
	if _, err := f.b.Complete(ctx, key, first.LeaseOwner, dynDone(f, "late")); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("late completion: %v, want ErrLeaseLost", err)
	}
	if err := f.b.Fail(ctx, key, first.LeaseOwner, "late"); !errors.Is(err, idempotency.ErrLeaseLost) {
		t.Fatalf("late failure: %v, want ErrLeaseLost", err)
	}
	if _, err := f.b.Complete(ctx, key, second.LeaseOwner, dynDone(f, "ok")); err != nil {
		t.Fatal(err)
	}
	got, err := f.b.Get(ctx, key)
	if err != nil || got.Status != idempotency.StatusCompleted || string(got.Result) != "ok" || got.Attempts != 2 {
		t.Fatalf("after take-over: %+v %v", got, err)
	}
}

func TestDynamoDBFailedRunsAgainUpToMaxAttempts(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#k"
	spec := dynClaim(f, time.Minute)
	spec.MaxAttempts = 2
	for attempt := 1; attempt <= 2; attempt++ {
		c, claimed, err := f.b.Claim(ctx, key, spec)
		if err != nil || !claimed || c.Attempts != attempt {
			t.Fatalf("attempt %d: %+v claimed=%v err=%v", attempt, c, claimed, err)
		}
		if err := f.b.Fail(ctx, key, c.LeaseOwner, "boom "+strings.Repeat("x", 400)); err != nil {
			t.Fatal(err)
		}
	}
	old, claimed, err := f.b.Claim(ctx, key, spec)
	if err != nil || claimed || old.Status != idempotency.StatusFailed || old.Attempts != 2 || !strings.HasPrefix(old.LastError, "boom x") || len(old.LastError) != 256 {
		t.Fatalf("exhausted: %+v claimed=%v err=%v", old, claimed, err)
	}
	// Without a limit it runs again.
	spec.MaxAttempts = 0
	if c, claimed, err := f.b.Claim(ctx, key, spec); err != nil || !claimed || c.Attempts != 3 {
		t.Fatalf("unlimited: %+v claimed=%v err=%v", c, claimed, err)
	}
}

// TestDynamoDBExpiredIsFresh: a record past its window is treated as absent
// even though TTL has not deleted it, and the new window starts at attempt 1.
func TestDynamoDBExpiredIsFresh(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#k"
	c := dynClaimed(t, f, key)
	f.b.Complete(ctx, key, c.LeaseOwner, dynDone(f, "old"))
	f.clock.Advance(time.Hour + time.Second)
	if _, err := f.b.Get(ctx, key); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("get expired: %v, want ErrNotFound", err)
	}
	f.meter.Reset()
	n, claimed, err := f.b.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || !claimed || n.Attempts != 1 || n.Result != nil {
		t.Fatalf("claim over expired: %+v claimed=%v err=%v", n, claimed, err)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.PutItem"] != 1 || len(snap) != 1 {
		t.Errorf("claim over an expired record cost %v, want one PutItem", snap)
	}
	got, _ := f.b.Get(ctx, key)
	if got.Status != idempotency.StatusInProgress || got.Result != nil || got.ResultSize != 0 {
		t.Fatalf("the old result survived the new window: %+v", got)
	}
}

func TestDynamoDBForget(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#k"
	c := dynClaimed(t, f, key)
	f.b.Complete(ctx, key, c.LeaseOwner, dynDone(f, "r"))
	if err := f.forget(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, claimed, err := f.b.Claim(ctx, key, dynClaim(f, time.Minute)); err != nil || !claimed {
		t.Fatalf("claim after forget: claimed=%v err=%v", claimed, err)
	}
	if err := f.forget(ctx, "nope#"+uniqueName("k")); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("forget unknown: %v", err)
	}
}

// TestDynamoDBResultSizes: results from 512 bytes are stored compressed when
// that is smaller (a 3 KB JSON result costs one write unit), and a result
// that cannot fit an item is recorded as unstored instead of failing the
// write, so repeats see that the call ran.
func TestDynamoDBResultSizes(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#json"
	c := dynClaimed(t, f, key)
	big := []byte(`{"items":[` + strings.Repeat(`{"sku":"abc-123","qty":1},`, 120) + `{}]}`)
	got, err := f.b.Complete(ctx, key, c.LeaseOwner, idempotency.Completion{Data: big, ExpiresAt: f.clock.Now().Add(time.Hour)})
	if err != nil || got.Unstored != "" || got.StoredSize >= 1000 || got.ResultSize != len(big) {
		t.Fatalf("complete %d bytes: %+v %v", len(big), got, err)
	}
	back, err := f.b.Get(ctx, key)
	if err != nil || !bytes.Equal(back.Result, big) {
		t.Fatalf("read back: %v (%d bytes)", err, len(back.Result))
	}

	key = uniqueName("op") + "#huge"
	c = dynClaimed(t, f, key)
	noise := make([]byte, idempotency.MaxResultBytes+10)
	rand.Read(noise) // incompressible
	got, err = f.b.Complete(ctx, key, c.LeaseOwner, idempotency.Completion{Data: noise, ExpiresAt: f.clock.Now().Add(time.Hour)})
	if err != nil || !strings.Contains(got.Unstored, "limit") || got.Result != nil {
		t.Fatalf("complete huge: %+v %v", got.Unstored, err)
	}
	back, err = f.b.Get(ctx, key)
	if err != nil || back.Status != idempotency.StatusCompleted || back.Unstored == "" || back.ResultSize != len(noise) || back.Result != nil {
		t.Fatalf("huge read back: %+v %v", back, err)
	}
	if old, claimed, err := f.b.Claim(ctx, key, dynClaim(f, time.Minute)); err != nil || claimed || old.Unstored == "" {
		t.Fatalf("repeat of an unstored call: claimed=%v err=%v", claimed, err)
	}
}

func TestDynamoDBConcurrentClaimsOneWinner(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	key := uniqueName("op") + "#k"
	const n = 30
	var won atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			_, claimed, err := f.b.Claim(t.Context(), key, dynClaim(f, time.Minute))
			if err != nil {
				t.Error(err)
			}
			if claimed {
				won.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d claims won, want 1", won.Load())
	}
}

// lostPut sends every PutItem twice and returns the second answer (see
// lostUpdate).
type lostPut struct{ *dynamodb.Client }

func (c lostPut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if _, err := c.Client.PutItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return c.Client.PutItem(ctx, in, o...)
}

// TestDynamoDBWritesWhoseAnswerWasLost: a claim, a completion and a failure
// that the SDK retried after the first answer was lost recognise their own
// write by the claim token instead of reporting a duplicate or a lost lease.
func TestDynamoDBWritesWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	lp := f.with(lostPut{f.db})
	lu := f.with(lostUpdate{f.db})
	key := uniqueName("op") + "#k"
	c, claimed, err := lp.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || !claimed {
		t.Fatalf("claim with a lost answer: claimed=%v err=%v", claimed, err)
	}
	if err := lu.Fail(ctx, key, c.LeaseOwner, "boom"); err != nil {
		t.Fatalf("fail with a lost answer: %v", err)
	}
	c, claimed, err = lu.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || !claimed || c.Attempts != 2 {
		t.Fatalf("take-over with a lost answer: %+v claimed=%v err=%v", c, claimed, err)
	}
	if _, err := lu.Complete(ctx, key, c.LeaseOwner, dynDone(f, "ok")); err != nil {
		t.Fatalf("complete with a lost answer: %v", err)
	}
}

// unanswered performs the writes it is told to and then reports a client
// timeout, as the SDK does when an attempt's answer is lost and it may not
// retry (its retry quota is spent).
type unanswered struct {
	*dynamodb.Client
	put, update bool // whose answers are lost
}

var errUnanswered = errors.New("request send failed: net/http: request canceled (Client.Timeout exceeded while awaiting headers); retry quota exceeded")

func (c unanswered) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.Client.PutItem(ctx, in, o...)
	if c.put {
		return nil, errUnanswered
	}
	return out, err
}

func (c unanswered) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.Client.UpdateItem(ctx, in, o...)
	if c.update {
		return nil, errUnanswered
	}
	return out, err
}

// TestDynamoDBWritesWhoseAnswerWasLostWithoutRetry: a claim, a failure, a
// take-over and a completion whose answer was lost, and that the SDK could
// not retry, read the record back and recognise their own write by the
// claim token instead of reporting the store unavailable.
func TestDynamoDBWritesWhoseAnswerWasLostWithoutRetry(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	lostPut := f.with(unanswered{Client: f.db, put: true})
	lostUpdate := f.with(unanswered{Client: f.db, update: true})
	key := uniqueName("op") + "#k"
	c, claimed, err := lostPut.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || !claimed {
		t.Fatalf("claim whose answer was lost: claimed=%v err=%v", claimed, err)
	}
	if err := lostUpdate.Fail(ctx, key, c.LeaseOwner, "boom"); err != nil {
		t.Fatalf("fail whose answer was lost: %v", err)
	}
	c, claimed, err = lostUpdate.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || !claimed || c.Attempts != 2 {
		t.Fatalf("take-over whose answer was lost: %+v claimed=%v err=%v", c, claimed, err)
	}
	if _, err := lostUpdate.Complete(ctx, key, c.LeaseOwner, dynDone(f, "ok")); err != nil {
		t.Fatalf("complete whose answer was lost: %v", err)
	}
	if got, err := f.b.Get(ctx, key); err != nil || got.Status != idempotency.StatusCompleted || string(got.Result) != "ok" {
		t.Fatalf("stored: %+v %v", got, err)
	}
	// A refusal whose answer was lost is no claim: the record read back is
	// another call's, so the store stays unavailable (retryable).
	if _, claimed, err := lostPut.Claim(ctx, key, dynClaim(f, time.Minute)); claimed || !errors.Is(err, idempotency.ErrUnavailable) {
		t.Fatalf("claim of a completed key whose answer was lost: claimed=%v err=%v, want ErrUnavailable", claimed, err)
	}
}

func TestDynamoDBRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	for _, key := range []string{"", strings.Repeat("k", idempotency.MaxKeyBytes+1), "bad\xff"} {
		if _, _, err := f.b.Claim(ctx, key, dynClaim(f, time.Minute)); !errors.Is(err, idempotency.ErrInvalid) {
			t.Errorf("claim %q: %v, want ErrInvalid", key, err)
		}
	}
	past := dynClaim(f, -time.Second)
	if _, _, err := f.b.Claim(ctx, "op#k", past); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("lease in the past: %v", err)
	}
	if _, err := f.b.Complete(ctx, "op#k", "", dynDone(f, "x")); !errors.Is(err, idempotency.ErrInvalid) {
		t.Errorf("empty token: %v", err)
	}
	if n := f.meter.Snapshot(); len(n) != 0 {
		t.Errorf("bad input reached DynamoDB: %v", n)
	}
}

// TestDynamoDBLargestResultFits: a result of exactly MaxResultBytes stored bytes,
// under the longest key, fits the item the emulator (which enforces
// DynamoDB's 400 KB limit) accepts.
func TestDynamoDBLargestResultFits(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#" + strings.Repeat("k", idempotency.MaxKeyBytes-20)
	spec := dynClaim(f, time.Minute)
	spec.Validation = strings.Repeat("v", 64)
	c, claimed, err := f.b.Claim(ctx, key, spec)
	if err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if err := f.b.Fail(ctx, key, c.LeaseOwner, strings.Repeat("e", 300)); err != nil {
		t.Fatal(err)
	}
	c, _, err = f.b.Claim(ctx, key, spec)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, idempotency.MaxResultBytes)
	rand.Read(data)
	got, err := f.b.Complete(ctx, key, c.LeaseOwner, idempotency.Completion{Data: data, ExpiresAt: f.clock.Now().Add(time.Hour)})
	if err != nil || got.Unstored != "" {
		t.Fatalf("largest result: %v %q", err, got.Unstored)
	}
	back, err := f.b.Get(ctx, key)
	if err != nil || !bytes.Equal(back.Result, data) {
		t.Fatalf("read back: %v", err)
	}
}

// TestDynamoDBRepeatWithoutAllOld: where an endpoint omits the old item from a
// failed condition, a repeat costs one consistent read more.
func TestDynamoDBRepeatWithoutAllOld(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	l := f.with(noOld{f.db})
	key := uniqueName("op") + "#k"
	c := dynClaimed(t, f, key)
	f.b.Complete(ctx, key, c.LeaseOwner, dynDone(f, "r"))
	f.meter.Reset()
	old, claimed, err := l.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || claimed || string(old.Result) != "r" {
		t.Fatalf("repeat: %+v claimed=%v err=%v", old, claimed, err)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.PutItem"] != 1 || snap["DynamoDB.GetItem"] != 1 {
		t.Errorf("fallback cost %v, want one PutItem and one GetItem", snap)
	}
}

// TestDynamoDBLiveLeaseOutlivesWindow: a record in progress under a live lease
// is not expired even when its expires_at has passed (a record claimed by
// a version that set the window regardless of the lease, or a window
// shorter than the invocation): a new claim does not overwrite it, a read
// returns it, and its holder completes it. A claim never sets expires_at
// before its lease end, so TTL cannot delete a live claim.
func TestDynamoDBLiveLeaseOutlivesWindow(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#k"
	now := f.clock.Now()
	num := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	if _, err := f.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &f.table, Item: map[string]types.AttributeValue{
		"pk": str("idem#" + key), "sk": str("idem"), "status": str(string(idempotency.StatusInProgress)), "lease_owner": str("holder"),
		"lease_until": num(now.Add(time.Minute).UnixMilli()), "attempts": num(1), "created_at": num(now.Add(-10 * time.Second).UnixMilli()),
		"updated_at": num(now.Add(-10 * time.Second).UnixMilli()), "expires_at": num(now.Add(-5 * time.Second).Unix()), "ver": num(1),
	}}); err != nil {
		t.Fatal(err)
	}
	got, claimed, err := f.b.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || claimed || got.LeaseOwner != "holder" || got.Status != idempotency.StatusInProgress {
		t.Fatalf("claim over a live lease past its window: %+v claimed=%v err=%v", got, claimed, err)
	}
	if got, err := f.b.Get(ctx, key); err != nil || got.LeaseOwner != "holder" {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := f.b.Complete(ctx, key, "holder", dynDone(f, "ok")); err != nil {
		t.Fatalf("the holder's completion: %v", err)
	}
	if got, err := f.b.Get(ctx, key); err != nil || string(got.Result) != "ok" || got.Expired(f.clock.Now()) {
		t.Fatalf("after completion: %+v %v", got, err)
	}

	// A claim's window never ends before its lease (rounded up to TTL's
	// seconds), in the put and in a take-over.
	key = uniqueName("op") + "#short"
	spec := idempotency.Claim{LeaseUntil: f.clock.Now().Add(90*time.Second + 300*time.Millisecond), ExpiresAt: f.clock.Now().Add(5 * time.Second)}
	c, claimed, err := f.b.Claim(ctx, key, spec)
	if err != nil || !claimed || c.ExpiresAt.Before(c.LeaseUntil) {
		t.Fatalf("short window: %+v claimed=%v err=%v", c, claimed, err)
	}
	if got, _ := f.b.Get(ctx, key); got.ExpiresAt.Before(got.LeaseUntil) {
		t.Fatalf("stored expires_at %v before lease_until %v", got.ExpiresAt, got.LeaseUntil)
	}
	if err := f.b.Fail(ctx, key, c.LeaseOwner, "boom"); err != nil {
		t.Fatal(err)
	}
	spec.LeaseUntil = spec.LeaseUntil.Add(time.Minute)
	c, claimed, err = f.b.Claim(ctx, key, spec)
	if err != nil || !claimed || c.Attempts != 2 || c.ExpiresAt.Before(c.LeaseUntil) {
		t.Fatalf("take-over with a short window: %+v claimed=%v err=%v", c, claimed, err)
	}
	if got, _ := f.b.Get(ctx, key); got.ExpiresAt.Before(got.LeaseUntil) {
		t.Fatalf("take-over stored expires_at %v before lease_until %v", got.ExpiresAt, got.LeaseUntil)
	}
}

// tickingPut moves the clock after a PutItem has been answered: the record
// reaches its expiry second between the claim's put and its judgement of
// the record the put found.
type tickingPut struct {
	*dynamodb.Client
	tick func()
}

func (c tickingPut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.Client.PutItem(ctx, in, o...)
	c.tick()
	return out, err
}

// TestDynamoDBClaimAtExpiryBoundary: a claim judges the record its put found
// at the put's own time, and each retry puts with a fresh time, so a
// record expiring while the claim is in flight is either replayed or
// claimed afresh, never a conflict.
func TestDynamoDBClaimAtExpiryBoundary(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#k"
	c := dynClaimed(t, f, key)
	if _, err := f.b.Complete(ctx, key, c.LeaseOwner, dynDone(f, "r")); err != nil {
		t.Fatal(err)
	}
	got, _ := f.b.Get(ctx, key)
	f.clock.Advance(got.ExpiresAt.Add(-300 * time.Millisecond).Sub(f.clock.Now()))
	var ticks atomic.Int32
	l := f.with(tickingPut{f.db, func() {
		if ticks.Add(1) == 1 {
			f.clock.Advance(500 * time.Millisecond)
		}
	}})
	old, claimed, err := l.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || (!claimed && (old.Status != idempotency.StatusCompleted || string(old.Result) != "r")) {
		t.Fatalf("claim across the expiry second: %+v claimed=%v err=%v", old, claimed, err)
	}
}

// racingUpdate lets another writer change the record just before each of
// the first `races` UpdateItems, and then loses the answer of the next
// one (sends it twice).
type racingUpdate struct {
	*dynamodb.Client
	table string
	races int32
	n     *atomic.Int32
}

func (c racingUpdate) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if c.n.Add(1) <= c.races {
		if _, err := c.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &c.table, Key: in.Key,
			UpdateExpression:          aws.String("SET ver = ver + :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		}); err != nil {
			return nil, err
		}
		return c.Client.UpdateItem(ctx, in, o...)
	}
	if _, err := c.Client.UpdateItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return c.Client.UpdateItem(ctx, in, o...)
}

// TestDynamoDBClaimUnderContention: a take-over that keeps losing its race
// gives up with an error callers can branch on (ErrUnavailable, and
// ErrConflict for the detail), and one that wins on its last try but
// loses the answer recognises its own claim instead of reporting a
// conflict.
func TestDynamoDBClaimUnderContention(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	failed := func(key string) {
		c := dynClaimed(t, f, key)
		if err := f.b.Fail(ctx, key, c.LeaseOwner, "boom"); err != nil {
			t.Fatal(err)
		}
	}
	key := uniqueName("op") + "#lost"
	failed(key)
	l := f.with(racingUpdate{Client: f.db, table: f.table, races: 2, n: new(atomic.Int32)})
	c, claimed, err := l.Claim(ctx, key, dynClaim(f, time.Minute))
	if err != nil || !claimed {
		t.Fatalf("won on the last try, answer lost: %+v claimed=%v err=%v", c, claimed, err)
	}
	if got, _ := f.b.Get(ctx, key); got.LeaseOwner != c.LeaseOwner || got.Status != idempotency.StatusInProgress {
		t.Fatalf("stored %+v, claim %+v", got, c)
	}

	key = uniqueName("op") + "#busy"
	failed(key)
	l = f.with(racingUpdate{Client: f.db, table: f.table, races: 100, n: new(atomic.Int32)})
	_, claimed, err = l.Claim(ctx, key, dynClaim(f, time.Minute))
	if claimed || !errors.Is(err, idempotency.ErrUnavailable) || !errors.Is(err, idempotency.ErrConflict) {
		t.Fatalf("always losing: claimed=%v err=%v, want ErrUnavailable and ErrConflict", claimed, err)
	}
}

// TestDynamoDBResultOverDecodeLimit: a result that compresses under
// MaxResultBytes but is over MaxResultDecodedBytes is recorded as unstored,
// since it could never be read back.
func TestDynamoDBResultOverDecodeLimit(t *testing.T) {
	t.Parallel()
	f := dynSetup(t)
	ctx := t.Context()
	key := uniqueName("op") + "#big"
	c := dynClaimed(t, f, key)
	data := bytes.Repeat([]byte("a"), idempotency.MaxResultDecodedBytes+1)
	got, err := f.b.Complete(ctx, key, c.LeaseOwner, idempotency.Completion{Data: data, ExpiresAt: f.clock.Now().Add(time.Hour)})
	if err != nil || got.Unstored == "" || got.Result != nil {
		t.Fatalf("complete: %q %v", got.Unstored, err)
	}
	back, err := f.b.Get(ctx, key)
	if err != nil || back.Unstored == "" || back.ResultSize != len(data) {
		t.Fatalf("read back: %+v %v", back.Unstored, err)
	}
}
