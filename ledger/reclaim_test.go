package ledger_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

func TestDueFromWalksEachEntryOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Shards = 1 })
	want := map[ledger.Key]bool{}
	for range 7 {
		id := newID(t)
		create(t, f, id)
		want[id] = true
		f.clock.Advance(time.Millisecond) // distinct due_at, so the order is defined
	}
	f.clock.Advance(time.Minute)
	got := map[ledger.Key]bool{}
	var sizes []int
	cur := ledger.DueCursor{}
	for i := 0; !cur.Done(); i++ {
		if i > 5 {
			t.Fatal("the walk does not end")
		}
		ids, next, err := f.l.DueFrom(t.Context(), 0, f.clock.Now(), 3, cur)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(ids))
		for _, id := range ids {
			if got[id] {
				t.Errorf("%v returned twice", id)
			}
			got[id] = true
			// Handled as the reclaimer does, while the walk goes on.
			rec, _ := f.l.Get(t.Context(), id)
			if _, err := f.l.Requeue(t.Context(), rec, f.clock.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		cur = next
	}
	if len(got) != len(want) {
		t.Fatalf("walked %d of %d due records (pages %v)", len(got), len(want), sizes)
	}
	if sizes[0] != 3 || sizes[1] != 3 {
		t.Errorf("pages %v, want 3, 3, 1 (and possibly an empty last one)", sizes)
	}
	if ids, next, err := f.l.DueFrom(t.Context(), 0, f.clock.Now(), 3, cur); len(ids) != 0 || !next.Done() || err != nil {
		t.Errorf("a finished walk went on: %v %v %v", ids, next.Done(), err)
	}
}

func TestGetManyAndPayloads(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Retention = time.Hour })
	var ids []ledger.Key
	var all []ledger.Record
	bodies := map[ledger.Key][]byte{}
	for i := range 130 { // more than one BatchGetItem's 100 keys
		id := newID(t)
		all = append(all, create(t, f, id))
		ids = append(ids, id)
		if i%10 == 0 {
			continue // no payload stored
		}
		body := []byte(fmt.Sprintf(`{"id":%q,"pad":%q}`, id.ID, bytes.Repeat([]byte("x"), i*20))) // some compressed, some not
		if err := f.l.PutPayload(t.Context(), id, body, createdAs.BodySHA256); err != nil {
			t.Fatal(err)
		}
		bodies[id] = body
	}
	missing := newID(t)
	f.meter.Reset()
	recs, err := f.l.GetMany(t.Context(), append(append([]ledger.Key{missing}, ids...), ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(ids) {
		t.Fatalf("GetMany found %d of %d records", len(recs), len(ids))
	}
	for _, id := range ids {
		if r, ok := recs[id]; !ok || r.Key != id || r.Status != ledger.Received || r.Version != 1 {
			t.Fatalf("record %v: %+v", id, r)
		}
	}
	if _, ok := recs[missing]; ok {
		t.Error("a record that does not exist was returned")
	}
	if calls := f.meter.Snapshot()["DynamoDB.BatchGetItem"]; calls != 2 {
		t.Errorf("131 distinct keys took %d BatchGetItem calls, want 2", calls)
	}
	got, err := f.l.Payloads(t.Context(), all)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(bodies) {
		t.Fatalf("Payloads found %d of %d", len(got), len(bodies))
	}
	for id, b := range bodies {
		if !bytes.Equal(got[id], b) {
			t.Fatalf("payload %v: %q", id, got[id])
		}
	}
	// Expired records are absent, as Get treats them.
	f.clock.Advance(2 * time.Hour)
	if recs, err := f.l.GetMany(t.Context(), ids[:5]); err != nil || len(recs) != 0 {
		t.Errorf("expired records returned: %d, %v", len(recs), err)
	}
}

func TestUnsentTakesBackTheReclaim(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := newID(t)
	rec := create(t, f, id)
	f.clock.Advance(time.Minute)
	requeued, err := f.l.Requeue(ctx, rec, f.clock.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	soon := f.clock.Now().Add(5 * time.Second)
	back, err := f.l.Unsent(ctx, requeued, soon)
	if err != nil {
		t.Fatal(err)
	}
	if back.Reclaims != 0 || !back.DueAt.Equal(soon) || back.Status != ledger.Received || back.Version != requeued.Version+1 {
		t.Fatalf("after unsent: %+v", back)
	}
	// Only once, and only on the record as the re-drive left it.
	if _, err := f.l.Unsent(ctx, requeued, soon); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("second unsent: %v", err)
	}
	again, err := f.l.Requeue(ctx, back, f.clock.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Claim(ctx, id, time.Minute); err != nil { // the message did arrive after all
		t.Fatal(err)
	}
	if _, err := f.l.Unsent(ctx, again, soon); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("unsent after a claim: %v", err)
	}
	if r, _ := f.l.Get(ctx, id); r.Status != ledger.Processing || r.Reclaims != 1 {
		t.Errorf("record after the refused unsent: %+v", r)
	}
}

func TestRunLock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	until := f.clock.Now().Add(time.Minute)
	if _, err := f.l.LockRun(ctx, "run-a", until); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.LockRun(ctx, "run-b", until); !errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("a second run took a held lock: %v", err)
	}
	if _, err := f.l.LockRun(ctx, "run-a", until.Add(time.Minute)); err != nil {
		t.Fatalf("the holder (handing over to its continuation) could not take it again: %v", err)
	}
	if err := f.l.UnlockRun(ctx, "run-b", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.LockRun(ctx, "run-b", until); !errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("someone else's unlock released the lock: %v", err)
	}
	f.clock.Advance(2 * time.Minute) // the holder died; its time passed
	if _, err := f.l.LockRun(ctx, "run-b", f.clock.Now().Add(time.Minute)); err != nil {
		t.Fatalf("an expired lock was not taken over: %v", err)
	}
	if err := f.l.UnlockRun(ctx, "run-b", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.LockRun(ctx, "run-c", f.clock.Now().Add(time.Minute)); err != nil {
		t.Fatalf("a released lock: %v", err)
	}
	// The lock is no record: not listed, never due.
	if recs, err := f.l.List(ctx, "", 0); err != nil || len(recs) != 0 {
		t.Fatalf("listed %v, %v", recs, err)
	}
	for shard := range f.l.Shards() {
		if ids, _ := f.l.Due(ctx, shard, f.clock.Now().Add(48*time.Hour), 10); len(ids) != 0 {
			t.Fatalf("due: %v", ids)
		}
	}
}

// DueAfter walks the entries between a mark (exclusive) and a time
// (inclusive), with the due times the index holds.
func TestDueAfterWalksBetweenAMarkAndNow(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *ledger.Options) { o.Shards = 1 })
	var at []time.Time
	var ids []ledger.Key
	for range 5 {
		id := newID(t)
		rec := create(t, f, id)
		ids, at = append(ids, id), append(at, rec.DueAt)
		f.clock.Advance(time.Second)
	}
	walk := func(after, upTo time.Time) []ledger.DueEntry {
		t.Helper()
		var out []ledger.DueEntry
		for cur := (ledger.DueCursor{}); !cur.Done(); {
			page, next, err := f.l.DueAfter(t.Context(), 0, after, upTo, 2, cur)
			if err != nil {
				t.Fatal(err)
			}
			out, cur = append(out, page...), next
		}
		return out
	}
	got := walk(at[1], at[3])
	if len(got) != 2 || got[0].ID != ids[2] || got[1].ID != ids[3] || !got[0].At.Equal(at[2]) || !got[1].At.Equal(at[3]) {
		t.Fatalf("(%v, %v]: %+v, want entries 2 and 3 with their due times", at[1], at[3], got)
	}
	if got := walk(time.Time{}, at[4]); len(got) != 5 {
		t.Fatalf("from the oldest: %d entries, want 5", len(got))
	}
	if got := walk(at[4], at[4]); len(got) != 0 {
		t.Fatalf("an empty range returned %+v", got)
	}
	if got := walk(at[4], at[0]); len(got) != 0 {
		t.Fatalf("a range that ends before it starts returned %+v", got)
	}
}

// The marks live beside the run lock: LockRun reads them in its own write,
// UnlockRun stores them in its own, and a run without the lock stores and
// reads them directly. A fresh table has none.
func TestDueMarksRideOnTheRunLock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	if m, err := f.l.ReadDueMarks(ctx); err != nil || len(m) != 0 {
		t.Fatalf("fresh table: marks %v, %v", m, err)
	}
	until := f.clock.Now().Add(time.Minute)
	m, err := f.l.LockRun(ctx, "run-a", until)
	if err != nil || len(m) != 0 {
		t.Fatalf("first lock: marks %v, %v", m, err)
	}
	t0 := f.clock.Now().Truncate(time.Millisecond)
	want := ledger.DueMarks{0: t0, 3: t0.Add(-time.Hour)}
	f.meter.Reset()
	if err := f.l.UnlockRun(ctx, "run-a", want); err != nil {
		t.Fatal(err)
	}
	if calls := f.meter.Snapshot(); calls["DynamoDB.UpdateItem"] != 1 || len(calls) != 1 {
		t.Errorf("unlock with marks took %v, want one UpdateItem", calls)
	}
	m, err = f.l.LockRun(ctx, "run-b", until)
	if err != nil || len(m) != 2 || !m[0].Equal(t0) || !m[3].Equal(t0.Add(-time.Hour)) {
		t.Fatalf("marks read by the next lock: %v, %v; want %v", m, err, want)
	}
	// Stored by a run that lost the lock meanwhile: the marks are kept
	// all the same (each run's marks hold for what it looked at).
	later := ledger.DueMarks{0: t0.Add(time.Minute)}
	if err := f.l.UnlockRun(ctx, "run-a", later); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.l.ReadDueMarks(ctx); len(m) != 1 || !m[0].Equal(t0.Add(time.Minute)) {
		t.Fatalf("marks after a stale unlock: %v", m)
	}
	if _, err := f.l.LockRun(ctx, "run-c", until); !errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("a stale unlock released run-b's lock: %v", err)
	}
	if err := f.l.SaveDueMarks(ctx, ledger.DueMarks{1: t0}); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.l.ReadDueMarks(ctx); len(m) != 1 || !m[1].Equal(t0) {
		t.Fatalf("saved marks: %v", m)
	}
	// Still no record: never listed, never due.
	if recs, err := f.l.List(ctx, "", 0); err != nil || len(recs) != 0 {
		t.Fatalf("listed %v, %v", recs, err)
	}
}

// A due time is never written before its write, whatever the caller asks:
// the reclaimer's marks trail its runs by a lag and rely on it.
func TestDueTimesAreNeverInThePast(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := newID(t)
	rec := create(t, f, id)
	past := f.clock.Now().Add(-time.Hour)
	for _, step := range []struct {
		name  string
		write func(ledger.Record) (ledger.Record, error)
	}{
		{"postpone", func(r ledger.Record) (ledger.Record, error) { return f.l.Postpone(ctx, r, past) }},
		{"requeue", func(r ledger.Record) (ledger.Record, error) { return f.l.Requeue(ctx, r, past) }},
		{"unsent", func(r ledger.Record) (ledger.Record, error) { return f.l.Unsent(ctx, r, past) }}, // after a requeue
	} {
		name, write := step.name, step.write
		got, err := write(rec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.DueAt.Before(f.clock.Now()) {
			t.Errorf("%s wrote due_at %v, before the write at %v", name, got.DueAt, f.clock.Now())
		}
		rec = got
	}
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	failed, err := f.l.Fail(ctx, lease, "boom", -time.Hour)
	if err != nil || failed.DueAt.Before(f.clock.Now()) {
		t.Errorf("fail with a negative delay: due %v at %v (%v)", failed.DueAt, f.clock.Now(), err)
	}
}
