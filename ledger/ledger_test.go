package ledger_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/ledger"
)

type fixture struct {
	l     *ledger.Ledger
	clock *fakeclock.Clock
	meter *awstest.Meter
	db    *dynamodb.Client
	table string
}

// setup creates a fresh table in the emulator and a ledger on it with an
// injected clock and a request meter.
func setup(t *testing.T, opts ...func(*ledger.Options)) fixture {
	t.Helper()
	m := awstest.NewMeter()
	cfg := awstest.Config(t, m.APIOption)
	table := awstest.Table(t, cfg)
	db := dynamodb.NewFromConfig(cfg)
	c := fakeclock.New(time.Now().UTC().Truncate(time.Millisecond))
	o := ledger.Options{Table: table, Shards: 4, ReclaimAfter: time.Minute, Now: c.Now}
	for _, f := range opts {
		f(&o)
	}
	l, err := ledger.New(db, o)
	if err != nil {
		t.Fatal(err)
	}
	m.Reset()
	return fixture{l: l, clock: c, meter: m, db: db, table: table}
}

func newID(t *testing.T) ledger.Key {
	return ledger.Key{Source: "stripe", Tenant: "acme", ID: awstest.Name("evt")}
}

// createdAs is the identity of the events create writes.
var createdAs = ledger.Identity{Type: "charge.succeeded", BodySHA256: "abc"}

func create(t *testing.T, f fixture, id ledger.Key) ledger.Record {
	t.Helper()
	rec, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: createdAs.Type, BodySHA256: createdAs.BodySHA256})
	if err != nil || !created {
		t.Fatalf("create %s: created=%v err=%v", id, created, err)
	}
	return rec
}

func TestCreateConcurrentOneWinner(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	const n = 50
	var created atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			rec, c, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "t", BodySHA256: "abc"})
			if err != nil {
				errs <- err
				return
			}
			if c {
				created.Add(1)
			} else if rec.Key != id || rec.Status != ledger.Received || rec.BodySHA256 != "abc" {
				errs <- fmt.Errorf("duplicate saw %+v", rec)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := created.Load(); got != 1 {
		t.Fatalf("created %d times, want exactly 1", got)
	}
	if got := f.meter.Snapshot()["DynamoDB.PutItem"]; got != n {
		t.Errorf("PutItem requests = %d, want %d (one per caller, no extra reads)", got, n)
	}
}

func TestDuplicateCostsOneRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	create(t, f, id)
	f.meter.Reset()
	rec, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: "x", BodySHA256: "other"})
	if err != nil || created {
		t.Fatalf("duplicate: created=%v err=%v", created, err)
	}
	if rec.BodySHA256 != "abc" || rec.Status != ledger.Received {
		t.Errorf("duplicate returned %+v, want the stored record", rec)
	}
	if snap := f.meter.Snapshot(); len(snap) != 1 || snap["DynamoDB.PutItem"] != 1 {
		t.Errorf("duplicate cost %v, want exactly one PutItem", snap)
	}
}

// noOld strips ALL_OLD from failed conditions, as some endpoints do.
type noOld struct{ *dynamodb.Client }

func (c noOld) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.Client.PutItem(ctx, in, o...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ccf.Item = nil
	}
	return out, err
}

func TestDuplicateFallsBackToConsistentRead(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l, err := ledger.New(noOld{f.db}, ledger.Options{Table: f.table, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	id := newID(t)
	create(t, f, id)
	f.meter.Reset()
	rec, created, err := l.Create(t.Context(), ledger.NewEvent{Key: id})
	if err != nil || created || rec.BodySHA256 != "abc" {
		t.Fatalf("fallback: rec=%+v created=%v err=%v", rec, created, err)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.PutItem"] != 1 || snap["DynamoDB.GetItem"] != 1 {
		t.Errorf("fallback cost %v, want one PutItem and one GetItem", snap)
	}
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	type step func(t *testing.T, f fixture, id ledger.Key)
	claim := func(t *testing.T, f fixture, id ledger.Key) ledger.Lease {
		t.Helper()
		rec, err := f.l.Claim(t.Context(), id, lease)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if rec.Record.Status != ledger.Processing || rec.Token == "" {
			t.Fatalf("claim gave %+v", rec)
		}
		return rec
	}
	wantErr := func(t *testing.T, err, want error, status ledger.Status) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("got %v, want %v", err, want)
		}
		var se *ledger.StateError
		if status != "" && (!errors.As(err, &se) || se.Record.Status != status) {
			t.Fatalf("refusal %v should carry the record in status %s", err, status)
		}
	}
	tests := []struct {
		name string
		run  step
	}{
		{"received to processing to done", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			if c.Record.Attempts != 1 || !c.Until.Equal(f.clock.Now().Add(lease)) {
				t.Errorf("claim: attempts %d lease_until %v", c.Record.Attempts, c.Until)
			}
			d, err := f.l.Complete(t.Context(), c)
			if err != nil || d.Status != ledger.Done || d.LeaseOwner != "" || !d.DueAt.Equal(c.Record.DueAt) { // its due entry stays (TestCompleteLeavesTheDueIndexAlone)
				t.Fatalf("complete: %+v %v", d, err)
			}
		}},
		{"claim refused when done", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			f.l.Complete(t.Context(), c)
			_, err := f.l.Claim(t.Context(), id, lease)
			wantErr(t, err, ledger.ErrTerminal, ledger.Done)
		}},
		{"fail then claim again", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			r, err := f.l.Fail(t.Context(), c, "boom", time.Minute)
			if err != nil || r.Status != ledger.Failed || r.LastError != "boom" || r.LeaseOwner != "" {
				t.Fatalf("fail: %+v %v", r, err)
			}
			c2 := claim(t, f, id)
			if c2.Record.Attempts != 2 || c2.Token == c.Token {
				t.Errorf("second claim: attempts %d, owner reused %v", c2.Record.Attempts, c2.Token == c.Token)
			}
		}},
		{"bury makes dead and terminal", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			r, err := f.l.Bury(t.Context(), c, "permanent: card declined")
			if err != nil || r.Status != ledger.Dead || !r.DueAt.IsZero() {
				t.Fatalf("bury: %+v %v", r, err)
			}
			_, err = f.l.Claim(t.Context(), id, lease)
			wantErr(t, err, ledger.ErrTerminal, ledger.Dead)
		}},
		{"claim refused while leased", func(t *testing.T, f fixture, id ledger.Key) {
			claim(t, f, id)
			_, err := f.l.Claim(t.Context(), id, lease)
			wantErr(t, err, ledger.ErrLeased, ledger.Processing)
		}},
		{"complete refused for wrong owner", func(t *testing.T, f fixture, id ledger.Key) {
			claim(t, f, id)
			_, err := f.l.Complete(t.Context(), ledger.Lease{ID: id, Token: "not-the-owner"})
			wantErr(t, err, ledger.ErrLeaseLost, ledger.Processing)
		}},
		{"complete and fail refused after lease expiry", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			f.clock.Advance(lease)
			_, err := f.l.Complete(t.Context(), c)
			wantErr(t, err, ledger.ErrLeaseLost, ledger.Processing)
			_, err = f.l.Fail(t.Context(), c, "x", 0)
			wantErr(t, err, ledger.ErrLeaseLost, ledger.Processing)
		}},
		{"takeover after expiry, then old owner loses", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			f.clock.Advance(lease + time.Millisecond)
			c2 := claim(t, f, id)
			if c2.Token == c.Token || c2.Record.Attempts != 2 {
				t.Fatalf("takeover: %+v", c2)
			}
			f.clock.Advance(-lease) // even with time on its side, the old owner's token is gone
			_, err := f.l.Complete(t.Context(), c)
			wantErr(t, err, ledger.ErrLeaseLost, ledger.Processing)
			if _, err := f.l.Complete(t.Context(), c2); err != nil {
				t.Fatalf("new owner complete: %v", err)
			}
		}},
		{"extend keeps the lease alive", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			f.clock.Advance(lease - time.Second)
			if _, err := f.l.Extend(t.Context(), c, lease); err != nil {
				t.Fatalf("extend: %v", err)
			}
			f.clock.Advance(lease - time.Second)
			_, err := f.l.Claim(t.Context(), id, lease)
			wantErr(t, err, ledger.ErrLeased, ledger.Processing)
			if _, err := f.l.Complete(t.Context(), c); err != nil {
				t.Fatalf("complete after extend: %v", err)
			}
		}},
		{"extend never moves the lease earlier", func(t *testing.T, f fixture, id ledger.Key) {
			// "Keep it 5 s more" with 30 s left must not end the lease
			// 25 s early: the reclaimer would reset a live worker's event.
			c := claim(t, f, id)
			ext, err := f.l.Extend(t.Context(), c, 5*time.Second)
			if err != nil || !ext.Until.Equal(c.Until) || !ext.Record.LeaseUntil.Equal(c.Until) {
				t.Fatalf("extend by less than is left: until %v (record %v), err %v; want %v kept", ext.Until, ext.Record.LeaseUntil, err, c.Until)
			}
			f.clock.Advance(lease - time.Second)
			if _, err := f.l.Claim(t.Context(), id, lease); !errors.Is(err, ledger.ErrLeased) {
				t.Fatalf("claim before the original end: %v, want ErrLeased", err)
			}
			// Beyond the current end, it moves to now+d.
			ext, err = f.l.Extend(t.Context(), ext, lease)
			if err != nil || !ext.Until.Equal(f.clock.Now().Add(lease)) {
				t.Fatalf("extend past the end: until %v, err %v; want %v", ext.Until, err, f.clock.Now().Add(lease))
			}
		}},
		{"extend refused after expiry", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			f.clock.Advance(lease)
			_, err := f.l.Extend(t.Context(), c, lease)
			wantErr(t, err, ledger.ErrLeaseLost, ledger.Processing)
		}},
		{"terminal refuses fail and bury; a repeated complete is the holder's own", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			f.l.Complete(t.Context(), c)
			// Indistinguishable from the SDK retrying a complete whose
			// answer was lost: the holder's own write, not a lost lease.
			if r, err := f.l.Complete(t.Context(), c); err != nil || r.Status != ledger.Done {
				t.Fatalf("repeated complete: %+v %v", r, err)
			}
			_, err := f.l.Fail(t.Context(), c, "x", 0)
			wantErr(t, err, ledger.ErrLeaseLost, ledger.Done)
			_, err = f.l.Bury(t.Context(), c, "x")
			wantErr(t, err, ledger.ErrLeaseLost, ledger.Done)
		}},
		{"replay brings dead back", func(t *testing.T, f fixture, id ledger.Key) {
			c := claim(t, f, id)
			f.l.Bury(t.Context(), c, "x")
			r, err := f.l.Replay(t.Context(), id)
			if err != nil || r.Status != ledger.Received || r.Attempts != 0 || r.DueAt.IsZero() {
				t.Fatalf("replay: %+v %v", r, err)
			}
			claim(t, f, id)
			_, err = f.l.Replay(t.Context(), id)
			wantErr(t, err, ledger.ErrConflict, ledger.Processing)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			id := newID(t)
			create(t, f, id)
			tt.run(t, f, id)
		})
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	if _, err := f.l.Claim(t.Context(), id, time.Second); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("claim: %v", err)
	}
	if _, err := f.l.Complete(t.Context(), ledger.Lease{ID: id, Token: "tok"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("complete: %v", err)
	}
	if _, err := f.l.Get(t.Context(), id); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("get: %v", err)
	}
	if _, err := f.l.Payload(t.Context(), id); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("payload: %v", err)
	}
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	f := setup(t)
	long := string(bytes.Repeat([]byte("k"), ledger.MaxPartLen+1))
	for _, id := range []ledger.Key{{}, {Source: "s", Tenant: "t"}, {Source: "s", Tenant: "t", ID: long}} {
		if _, _, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id}); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("create %q: %v, want ErrInvalid", id, err)
		}
	}
	if _, err := f.l.Claim(t.Context(), newID(t), 0); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("zero lease: %v", err)
	}
	if _, err := f.l.List(t.Context(), "bogus", 1); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("bad status: %v", err)
	}
	if snap := f.meter.Snapshot(); len(snap) != 0 {
		t.Errorf("invalid calls reached DynamoDB: %v", snap)
	}
}

func TestExpiryIsCheckedInCode(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Retention = time.Hour })
	id := newID(t)
	create(t, f, id)
	f.clock.Advance(time.Hour + time.Second)
	if _, err := f.l.Get(t.Context(), id); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("expired get: %v", err)
	}
	if _, err := f.l.Claim(t.Context(), id, time.Second); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("expired claim: %v", err)
	}
	// The key is free again: a delivery after retention is a new event.
	rec, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, BodySHA256: "new"})
	if err != nil || !created || rec.BodySHA256 != "new" {
		t.Fatalf("create over expired: %+v %v %v", rec, created, err)
	}
}

func TestPayload(t *testing.T) {
	t.Parallel()
	f := setup(t)
	random := make([]byte, 50_000)
	rand.Read(random)
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"empty", []byte{}},
		{"small json", []byte(`{"id":"evt_1","amount":4900}`)},
		{"100KB compressible", bytes.Repeat([]byte(`{"line":"item","qty":1},`), 4200)},
		{"50KB random", random},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := newID(t)
			if err := f.l.PutPayload(t.Context(), id, tc.body, "abc"); err != nil {
				t.Fatal(err)
			}
			got, err := f.l.Payload(t.Context(), id)
			if err != nil || !bytes.Equal(got, tc.body) {
				t.Fatalf("round trip: %d bytes back, err %v", len(got), err)
			}
			out, err := f.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &f.table, Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: id.PK()}, "sk": &types.AttributeValueMemberS{Value: "p"}}})
			if err != nil {
				t.Fatal(err)
			}
			stored := len(out.Item["body"].(*types.AttributeValueMemberB).Value)
			if stored > len(tc.body) {
				t.Errorf("stored %d bytes for a %d-byte body", stored, len(tc.body))
			}
			if tc.name == "100KB compressible" && stored*10 > len(tc.body) {
				t.Errorf("compressible body stored in %d bytes, want under a tenth of %d", stored, len(tc.body))
			}
		})
	}
}

func TestRecordStaysSmall(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1NG8Du2eZvKYlo2CUI79vXWy"}
	create(t, f, id)
	c, _ := f.l.Claim(t.Context(), id, time.Minute)
	f.l.Fail(t.Context(), c, string(bytes.Repeat([]byte("e"), 5000)), time.Minute)
	out, err := f.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &f.table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: id.PK()}, "sk": &types.AttributeValueMemberS{Value: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for k, v := range out.Item {
		size += len(k)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			size += len(v.Value)
		case *types.AttributeValueMemberN:
			size += len(v.Value)/2 + 1
		}
	}
	// The largest record (a trimmed 1 KB error) must still be one write unit
	// per status change once the error is cleared; an ordinary one is far
	// below 1 KB.
	if size > 1024+600 {
		t.Errorf("record is %d bytes", size)
	}
}

func TestDueIndex(t *testing.T) {
	t.Parallel()
	f := setup(t)
	due := func() map[ledger.Key]bool {
		t.Helper()
		got := map[ledger.Key]bool{}
		for shard := range f.l.Shards() {
			ids, err := f.l.Due(t.Context(), shard, f.clock.Now(), 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				got[id] = true
			}
		}
		return got
	}
	a, b := newID(t), newID(t)
	create(t, f, a)
	create(t, f, b)
	if got := due(); len(got) != 0 {
		t.Fatalf("due before ReclaimAfter: %v", got)
	}
	c, _ := f.l.Claim(t.Context(), b, time.Second)
	f.l.Complete(t.Context(), c)
	f.clock.Advance(time.Minute)
	got := due()
	if !got[a] || !got[b] || len(got) != 2 {
		t.Fatalf("due after ReclaimAfter = %v, want %v and the done %v (a done record keeps its entry)", got, a, b)
	}
	// A dead record leaves the index.
	lease, _ := f.l.Claim(t.Context(), a, time.Second)
	if _, err := f.l.Bury(t.Context(), lease, "permanent"); err != nil {
		t.Fatal(err)
	}
	if got := due(); got[a] || !got[b] {
		t.Fatalf("due after a's burial = %v, want only the done %v", got, b)
	}
}

func TestReclaimTransitions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()

	// Requeue: two reclaimers read the same version; one wins.
	a := newID(t)
	rec := create(t, f, a)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := f.l.Requeue(ctx, rec, f.clock.Now().Add(time.Minute)); err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ledger.ErrConflict) {
				t.Errorf("requeue: %v", err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("requeue winners = %d, want 1", wins.Load())
	}
	if r, _ := f.l.Get(ctx, a); r.Reclaims != 1 {
		t.Errorf("reclaims = %d", r.Reclaims)
	}

	// Reset only after the lease expired.
	b := newID(t)
	create(t, f, b)
	f.l.Claim(ctx, b, 10*time.Second)
	rb, _ := f.l.Get(ctx, b)
	if _, err := f.l.Reset(ctx, rb, f.clock.Now()); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("reset with live lease: %v", err)
	}
	f.clock.Advance(10 * time.Second)
	r, err := f.l.Reset(ctx, rb, f.clock.Now().Add(time.Minute))
	if err != nil || r.Status != ledger.Received || r.LeaseOwner != "" || r.Reclaims != 1 {
		t.Fatalf("reset: %+v %v", r, err)
	}
	if _, err := f.l.Reset(ctx, rb, f.clock.Now()); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("stale reset: %v", err)
	}

	// Postpone a live lease without counting a reclaim.
	e := newID(t)
	create(t, f, e)
	f.l.Claim(ctx, e, time.Minute)
	re, _ := f.l.Get(ctx, e)
	next := f.clock.Now().Add(2 * time.Minute)
	if r, err := f.l.Postpone(ctx, re, next); err != nil || !r.DueAt.Equal(next) || r.Reclaims != 0 || r.Status != ledger.Processing {
		t.Fatalf("postpone: %+v %v", r, err)
	}
	if _, err := f.l.Postpone(ctx, re, next); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("stale postpone: %v", err)
	}

	// BuryStale refuses a live lease and a terminal record.
	d := newID(t)
	create(t, f, d)
	f.l.Claim(ctx, d, time.Minute)
	rd, _ := f.l.Get(ctx, d)
	if _, err := f.l.BuryStale(ctx, rd, "x"); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("bury live lease: %v", err)
	}
	f.clock.Advance(time.Minute)
	if r, err := f.l.BuryStale(ctx, rd, "reclaims exhausted"); err != nil || r.Status != ledger.Dead || r.LastError != "reclaims exhausted" {
		t.Fatalf("bury stale: %+v %v", r, err)
	}
	rd, _ = f.l.Get(ctx, d)
	if _, err := f.l.BuryStale(ctx, rd, "x"); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("bury dead: %v", err)
	}
}

func TestListAndCounts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for range 3 {
		create(t, f, newID(t))
	}
	id := newID(t)
	create(t, f, id)
	c, _ := f.l.Claim(t.Context(), id, time.Minute)
	f.l.Complete(t.Context(), c)
	f.l.PutPayload(t.Context(), id, []byte("{}"), "abc")
	counts, err := f.l.Counts(t.Context())
	if err != nil || counts[ledger.Received] != 3 || counts[ledger.Done] != 1 || len(counts) != 2 {
		t.Fatalf("counts %v %v", counts, err)
	}
	done, err := f.l.List(t.Context(), ledger.Done, 10)
	if err != nil || len(done) != 1 || done[0].Key != id {
		t.Fatalf("list done: %v %v", done, err)
	}
}

// lostAnswer sends every conditional write twice and returns the second
// answer, as the SDK does when a write succeeded but its response was lost
// (a timeout, a checksum mismatch) and the request is retried.
type lostAnswer struct{ *dynamodb.Client }

func (c lostAnswer) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if _, err := c.Client.PutItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return c.Client.PutItem(ctx, in, o...)
}

func (c lostAnswer) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if _, err := c.Client.UpdateItem(ctx, in, o...); err != nil {
		return nil, err
	}
	return c.Client.UpdateItem(ctx, in, o...)
}

func TestRetriedWriteWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	l, err := ledger.New(lostAnswer{f.db}, ledger.Options{Table: f.table, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	id := newID(t)
	// Create: the retry must still report created, or the receiver would
	// answer "duplicate" and never enqueue the event.
	if _, created, err := l.Create(t.Context(), ledger.NewEvent{Key: id}); err != nil || !created {
		t.Fatalf("create: created=%v err=%v", created, err)
	}
	// A second, real caller is still a duplicate.
	if _, created, _ := f.l.Create(t.Context(), ledger.NewEvent{Key: id}); created {
		t.Fatal("another caller also created")
	}
	// Claim: the retry must hand over the lease, not report it leased.
	rec, err := l.Claim(t.Context(), id, time.Minute)
	if err != nil || rec.Token == "" {
		t.Fatalf("claim: %+v %v", rec, err)
	}
	if _, err := f.l.Complete(t.Context(), rec); err != nil {
		t.Fatalf("the token the retried claim returned does not own the lease: %v", err)
	}
}
