package ledger_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

// seedMixed writes records of two sources and three tenants (one named as
// a source, to trap a tenant filter that matches source names), two
// types and every status, created a minute apart. It returns them by key.
func seedMixed(t *testing.T, f fixture) map[ledger.Key]ledger.Record {
	t.Helper()
	ctx := t.Context()
	out := map[ledger.Key]ledger.Record{}
	sources := []string{"stripe", "github"}
	tenants := []string{"acme", "zeta", "github"}
	types := []string{"charge.succeeded", "push"}
	for i := range 48 {
		id := ledger.Key{Source: sources[i%2], Tenant: tenants[i%3], ID: fmt.Sprintf("evt_%02d#%%", i)}
		typ := types[(i/2)%2]
		if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: typ, BodySHA256: "abc"}); err != nil {
			t.Fatal(err)
		}
		if i%5 != 0 {
			lease, err := f.l.Claim(ctx, id, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			switch i % 5 {
			case 1, 2:
				_, err = f.l.Complete(ctx, lease)
			case 3:
				_, err = f.l.Fail(ctx, lease, "downstream 503", time.Hour)
			case 4:
				if i%10 == 4 {
					_, err = f.l.Bury(ctx, lease, "permanent: card declined")
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		f.clock.Advance(time.Minute)
	}
	all, err := f.l.List(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		out[r.Key] = r
	}
	return out
}

// findAll pages through q and returns the keys in the order found.
func findAll(t *testing.T, f fixture, q ledger.Query) []ledger.Key {
	t.Helper()
	var keys []ledger.Key
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%+v: more than 100 pages", q)
		}
		page, err := f.l.Find(t.Context(), q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if len(page.Records) > max(q.Limit, 1) {
			t.Fatalf("%+v: page of %d records", q, len(page.Records))
		}
		for _, r := range page.Records {
			keys = append(keys, r.Key)
		}
		if page.Next == "" {
			return keys
		}
		q.After = page.Next
	}
}

// TestFindPagesThroughWhatAScanFinds: every query, paged a few records at
// a time through the due and dead indexes, returns exactly the records a
// scan of the table selects, each once.
func TestFindPagesThroughWhatAScanFinds(t *testing.T) {
	t.Parallel()
	f := setup(t)
	seeded := seedMixed(t, f)
	start := f.clock.Now().Add(-48 * time.Minute)
	queries := []ledger.Query{
		{},
		{Source: "stripe"},
		{Source: "github", Tenant: "zeta"},
		{Tenant: "github"},
		{Tenant: "acme", Status: ledger.Done},
		{Status: ledger.Dead},
		{Status: ledger.Failed, Type: "push"},
		{Status: ledger.Received},
		{Status: ledger.Processing, Source: "stripe"},
		{Type: "charge.succeeded"},
		{Since: start.Add(10 * time.Minute)},
		{Until: start.Add(20 * time.Minute), Source: "stripe"},
		{Since: start.Add(5 * time.Minute), Until: start.Add(30 * time.Minute), Status: ledger.Done},
		{Source: "nobody"},
	}
	for _, q := range queries {
		var want []ledger.Key
		for k, r := range seeded {
			if (q.Source == "" || r.Source == q.Source) && (q.Tenant == "" || r.Tenant == q.Tenant) &&
				(q.Status == "" || r.Status == q.Status) && (q.Type == "" || r.EventType == q.Type) &&
				(q.Since.IsZero() || !r.CreatedAt.Before(q.Since)) && (q.Until.IsZero() || r.CreatedAt.Before(q.Until)) {
				want = append(want, k)
			}
		}
		for _, limit := range []int{3, 50} {
			q.Limit = limit
			got := findAll(t, f, q)
			cmpKeys := func(a, b ledger.Key) int { return cmpString(a.String(), b.String()) }
			slices.SortFunc(got, cmpKeys)
			slices.SortFunc(want, cmpKeys)
			if !slices.Equal(got, want) {
				t.Errorf("%+v: found %d records %v\nwant %d %v", q, len(got), got, len(want), want)
			}
		}
	}
	if n := len(findAll(t, f, ledger.Query{Status: ledger.Dead, Limit: 50})); n != 5 {
		t.Errorf("found %d dead records, want the 5 buried", n)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestFindNewestFirst: records come newest first by their index time,
// across shards and pages.
func TestFindNewestFirst(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var ids []ledger.Key
	for i := range 20 {
		id := ledger.Key{Source: "stripe", Tenant: "acme", ID: fmt.Sprintf("evt_%02d", i)}
		create(t, f, id)
		ids = append(ids, id)
		f.clock.Advance(time.Second)
	}
	slices.Reverse(ids)
	if got := findAll(t, f, ledger.Query{Limit: 4}); !slices.Equal(got, ids) {
		t.Fatalf("order %v, want newest first %v", got, ids)
	}
}

// TestFindDeadIndex: a burial puts the record in the dead index in its own
// write, and a replay takes it out and back into the due index.
func TestFindDeadIndex(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := newID(t)
	create(t, f, id)
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f.meter.Reset()
	if _, err := f.l.Bury(ctx, lease, "permanent: no such customer"); err != nil {
		t.Fatal(err)
	}
	if snap := f.meter.Snapshot(); len(snap) != 1 || snap["DynamoDB.UpdateItem"] != 1 {
		t.Fatalf("bury made %v, want one UpdateItem", snap)
	}
	dead := findAll(t, f, ledger.Query{Status: ledger.Dead})
	if !slices.Equal(dead, []ledger.Key{id}) {
		t.Fatalf("dead: %v, want %v", dead, id)
	}
	if _, err := f.l.Replay(ctx, id); err != nil {
		t.Fatal(err)
	}
	if dead := findAll(t, f, ledger.Query{Status: ledger.Dead}); len(dead) != 0 {
		t.Fatalf("dead after replay: %v", dead)
	}
	if got := findAll(t, f, ledger.Query{Status: ledger.Received}); !slices.Equal(got, []ledger.Key{id}) {
		t.Fatalf("received after replay: %v, want %v", got, id)
	}
}

// TestFindRefusesBadQueries: a bad status, limit or time range, and a
// cursor that is not the query's, are refused with what to do.
func TestFindRefusesBadQueries(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for range 3 {
		create(t, f, newID(t))
	}
	page, err := f.l.Find(t.Context(), ledger.Query{Limit: 1})
	if err != nil || page.Next == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	now := f.clock.Now()
	for _, q := range []ledger.Query{
		{Status: "gone"},
		{Limit: ledger.MaxFindLimit + 1},
		{Limit: -1},
		{Since: now, Until: now},
		{After: "not a cursor"},
		{After: page.Next[:len(page.Next)-2]},
		{After: page.Next, Limit: 1, Source: "stripe"},
	} {
		if _, err := f.l.Find(t.Context(), q); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", q, err)
		}
	}
	if _, err := f.l.Find(t.Context(), ledger.Query{After: page.Next, Limit: 1}); err != nil {
		t.Errorf("the cursor of the same query (other page size): %v", err)
	}
}
