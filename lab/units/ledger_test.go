package units_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/lab/units"
	"github.com/hookledger/hookledger/ledger"
)

// The ledger's costs in units, against the emulator: what its writes and
// reads bill by DynamoDB's rules.

type fixture struct {
	l     *ledger.Ledger
	clock *fakeclock.Clock
	db    *dynamodb.Client
	table string
}

// setup creates a fresh table in the emulator and a ledger on it with an
// injected clock.
func setup(t *testing.T) fixture {
	t.Helper()
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	db := dynamodb.NewFromConfig(cfg)
	c := fakeclock.New(time.Now().UTC().Truncate(time.Millisecond))
	l, err := ledger.New(db, ledger.Options{Table: table, Shards: 4, ReclaimAfter: time.Minute, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{l: l, clock: c, db: db, table: table}
}

func newID(t *testing.T) ledger.Key {
	return ledger.Key{Source: "stripe", Tenant: "acme", ID: awstest.Name("evt")}
}

// createdAs is the identity of the events create writes.
var createdAs = ledger.Identity{Type: "charge.succeeded", BodySHA256: "abc"}

// createdTrace is the trace header create keeps, as long as the receiver's:
// X-Ray's Root, Parent and Sampled.
const createdTrace = "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=0"

func create(t *testing.T, f fixture, id ledger.Key) ledger.Record {
	t.Helper()
	rec, created, err := f.l.Create(t.Context(), ledger.NewEvent{Key: id, Type: createdAs.Type, BodySHA256: createdAs.BodySHA256, Trace: createdTrace})
	if err != nil || !created {
		t.Fatalf("create %s: created=%v err=%v", id, created, err)
	}
	return rec
}

func claimed(t *testing.T, f fixture, id ledger.Key, d time.Duration) ledger.Lease {
	t.Helper()
	lease, err := f.l.Claim(t.Context(), id, d)
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

// running is an event created and claimed under key.
func running(t *testing.T, f fixture, key string) ledger.Lease {
	t.Helper()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: key}
	create(t, f, id)
	lease, err := f.l.ClaimEvent(t.Context(), id, time.Minute, createdAs)
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

// The happy path writes the due index once: the record enters it at Create
// and keeps its entry when it is done (Complete moves no index key), so
// claim and complete cost one table write unit each and nothing on the
// index. Regression: Complete removed due_shard/due_at, an index delete
// billed like the put (1 WCU more per event). The run history (the claim
// starts a run, Complete ends it) and the dead index add no request and
// no unit: three writes, 3 table + 1 index WCU, as before them.
func TestCompleteLeavesTheDueIndexAlone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acc := &units.Accountant{Raw: f.db, Tables: map[string]units.TableSpec{f.table: units.LedgerTable}}
	cfg := awstest.Config(t, acc.APIOption)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: f.table, Shards: 4, ReclaimAfter: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	id := newID(t)
	created, _, err := l.Create(t.Context(), ledger.NewEvent{Key: id, Type: createdAs.Type, BodySHA256: createdAs.BodySHA256})
	if err != nil {
		t.Fatal(err)
	}
	if u := acc.Take(); u.WCU != 1 || u.IndexWCU != 1 {
		t.Fatalf("create: %v table + %v index WCU, want 1 + 1", u.WCU, u.IndexWCU)
	}
	lease, err := l.Claim(t.Context(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done, err := l.Complete(t.Context(), lease)
	if err != nil {
		t.Fatal(err)
	}
	u := acc.Take()
	if u.WCU != 2 || u.IndexWCU != 0 {
		t.Fatalf("claim + complete: %v table + %v index WCU, want 2 + 0", u.WCU, u.IndexWCU)
	}
	if len(u.Written) != 2 || u.Written[1] >= 1024 {
		t.Fatalf("claim + complete left records of %v bytes, want two writes under 1 KB", u.Written)
	}
	if len(done.Runs) != 1 || done.Runs[0].Outcome != ledger.RunDone {
		t.Fatalf("done record's runs: %+v, want the one run, done", done.Runs)
	}
	if done.Status != ledger.Done || !done.DueAt.Equal(created.DueAt) || done.DueShard != created.DueShard {
		t.Fatalf("done record %+v: want its due entry as Create made it (%v, shard %d)", done, created.DueAt, created.DueShard)
	}
}

// Taking a resource is one write of one unit; a stale event writes
// nothing. Reads: the item, and the holder's record when another event
// holds it.
func TestTakeOrderCosts(t *testing.T) {
	t.Parallel()
	m := awstest.NewMeter()
	raw := awstest.Config(t)
	table := awstest.Table(t, raw)
	acc := &units.Accountant{Raw: dynamodb.NewFromConfig(raw), Tables: map[string]units.TableSpec{table: {Keys: []string{"pk", "sk"}}}}
	cfg := awstest.Config(t, m.APIOption, acc.APIOption)
	c := fakeclock.New(time.Now().UTC().Truncate(time.Millisecond))
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{l: l, clock: c}
	ctx := t.Context()
	res := "sub_" + strings.Repeat("x", 24)
	measure := func(what string, lease ledger.Lease, pos int64, wantErr error, wantWCU float64, wantReads int) {
		t.Helper()
		m.Reset()
		acc.Take()
		_, err := l.TakeOrder(ctx, lease, res, pos, false)
		if !errors.Is(err, wantErr) {
			t.Fatalf("%s: %v", what, err)
		}
		u, calls := acc.Take(), m.Snapshot()
		if u.WCU != wantWCU || calls["DynamoDB.GetItem"] != wantReads || calls["DynamoDB.UpdateItem"] != int(wantWCU) {
			t.Errorf("%s: %v WCU, calls %v; want %v WCU, %d reads", what, u.WCU, calls, wantWCU, wantReads)
		}
		if n := len(u.Written); n > 0 {
			if u.Written[n-1] >= 1024 {
				t.Errorf("%s: order item is %d bytes", what, u.Written[n-1])
			}
			t.Logf("%s: order item %d bytes", what, u.Written[n-1])
		}
	}
	a := running(t, f, "evt_"+strings.Repeat("a", 24))
	measure("first event", a, 200, nil, 1, 1)
	l.Complete(ctx, a)
	b := running(t, f, "evt_"+strings.Repeat("b", 24))
	measure("newer event after another", b, 300, nil, 1, 2)
	measure("the same run again", b, 300, nil, 0, 1)
	old := running(t, f, "evt_"+strings.Repeat("c", 24))
	measure("stale event", old, 100, ledger.ErrStale, 0, 1)
}

// Peek reads with eventually consistent reads, at half GetMany's price, and
// finds the same records once the writes have settled.
func TestPeekIsGetManyAtHalfThePrice(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acc := &units.Accountant{Raw: f.db, Tables: map[string]units.TableSpec{f.table: {Keys: []string{"pk", "sk"}}}}
	l, err := ledger.New(dynamodb.NewFromConfig(awstest.Config(t, acc.APIOption)), ledger.Options{Table: f.table, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var ids []ledger.Key
	for range 4 {
		id := newID(t)
		create(t, f, id)
		ids = append(ids, id)
	}
	acc.Take()
	peeked, err := l.Peek(t.Context(), ids)
	if err != nil || len(peeked) != 4 {
		t.Fatalf("peek: %d records, %v", len(peeked), err)
	}
	peek := acc.Take().RCU
	got, err := l.GetMany(t.Context(), ids)
	if err != nil || len(got) != 4 {
		t.Fatalf("get many: %d records, %v", len(got), err)
	}
	if consistent := acc.Take().RCU; peek != consistent/2 || peek != 2 {
		t.Errorf("peek cost %v RCU, GetMany %v: want 2 and 4 (half a read unit each)", peek, consistent)
	}
	for id, r := range got {
		if peeked[id].Version != r.Version || peeked[id].Status != r.Status {
			t.Errorf("%v: peek %+v, get %+v", id, peeked[id], r)
		}
	}
}

// TestRecordWithStepsStaysUnderOneKB: three steps with id-sized results,
// and the run that recorded them, keep the record under 1 KB, so every
// status change still costs one write unit.
func TestRecordWithStepsStaysUnderOneKB(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1NG8Du2eZvKYlo2CUI79vXWy"}
	create(t, f, id)
	lease := claimed(t, f, id, time.Minute)
	if _, err := f.l.SaveSteps(t.Context(), lease,
		ledger.StepChange{Name: "charge", Status: ledger.StepDone, Result: "ch_3MmlLrLkdIwHu7ix0snN0B15"},
		ledger.StepChange{Name: "provision", Status: ledger.StepDone, Result: "acct_1Nv0FGQ9RKHgCVdK"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Complete(t.Context(), lease, ledger.StepChange{Name: "notify", Status: ledger.StepDone, Result: "ntf_000042"}); err != nil {
		t.Fatal(err)
	}
	out, err := f.db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &f.table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: id.PK()}, "sk": &types.AttributeValueMemberS{Value: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	if size := units.ItemSize(out.Item); size > 1024 {
		t.Fatalf("record with three steps is %d bytes: status changes would cost %v write units", size, units.WriteUnits(size))
	} else {
		t.Logf("record with three steps: %d bytes", size)
	}
}

// TestBurialAndReplayIndexCosts: a burial moves the record from the due
// index to the dead index in its one write (an index delete and an index
// put), and a replay moves it back the same way. Burials are rare; the
// happy path never touches the dead index (TestCompleteLeavesTheDueIndexAlone).
func TestBurialAndReplayIndexCosts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	acc := &units.Accountant{Raw: f.db, Tables: map[string]units.TableSpec{f.table: units.LedgerTable}}
	l, err := ledger.New(dynamodb.NewFromConfig(awstest.Config(t, acc.APIOption)), ledger.Options{Table: f.table, Shards: 4, ReclaimAfter: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	id := newID(t)
	create(t, f, id)
	lease := claimed(t, f, id, time.Minute)
	acc.Take()
	if _, err := l.Bury(t.Context(), lease, "permanent: no such customer"); err != nil {
		t.Fatal(err)
	}
	if u := acc.Take(); u.WCU != 1 || u.IndexWCU != 2 {
		t.Errorf("bury: %v table + %v index WCU, want 1 + 2 (out of due, into dead)", u.WCU, u.IndexWCU)
	}
	if _, err := l.Replay(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if u := acc.Take(); u.WCU != 1 || u.IndexWCU != 2 {
		t.Errorf("replay: %v table + %v index WCU, want 1 + 2 (out of dead, into due)", u.WCU, u.IndexWCU)
	}
}

// TestRecordSizeWorstCase measures the largest record the step limits
// allow: 16 at-most-once steps (each keeps its start) whose names and
// results take the 512 bytes the engine allows, every run slot filled,
// the last with an error of MaxRunError bytes, under an id, type and digest
// of real size. It fits two write units. (Under 1 KB holds for handlers
// that record a few steps, TestRecordWithStepsStaysUnderOneKB: sixteen
// steps' own overhead, about 36 bytes each, is past it on its own.)
func TestRecordSizeWorstCase(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1NG8Du2eZvKYlo2CUI79vXWy"}
	if _, _, err := f.l.Create(ctx, ledger.NewEvent{Key: id, Type: "customer.subscription.updated", BodySHA256: strings.Repeat("a", 64)}); err != nil {
		t.Fatal(err)
	}
	cause := strings.Repeat("e", ledger.MaxRunError)
	for range ledger.MaxRuns - 1 {
		if _, err := f.l.Fail(ctx, claimed(t, f, id, time.Minute), cause, 0); err != nil {
			t.Fatal(err)
		}
	}
	lease := claimed(t, f, id, time.Minute)
	var started, done []ledger.StepChange
	for i := range engine.MaxSteps {
		name := fmt.Sprintf("step%02d", i)
		started = append(started, ledger.StepChange{Name: name, Status: ledger.StepStarted})
		done = append(done, ledger.StepChange{Name: name, Status: ledger.StepDone, Result: strings.Repeat("r", engine.MaxTotalBytes/engine.MaxSteps-len(name))})
	}
	rec, err := f.l.SaveSteps(ctx, lease, started...)
	if err != nil {
		t.Fatal(err)
	}
	lease.Record = rec
	f.clock.Advance(time.Second)
	rec, err = f.l.Fail(ctx, lease, cause, 0, done...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Runs) != ledger.MaxRuns || len(rec.Steps) != engine.MaxSteps || rec.Steps["step00"].Started.IsZero() {
		t.Fatalf("record %+v: want every run slot and step filled, steps with their starts", rec)
	}
	out, err := f.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &f.table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: id.PK()}, "sk": &types.AttributeValueMemberS{Value: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]int{}
	for name, v := range out.Item {
		part := "the rest"
		switch {
		case strings.HasPrefix(name, "step#"):
			part = "steps"
		case strings.HasPrefix(name, "run"):
			part = "runs"
		}
		parts[part] += units.ItemSize(map[string]types.AttributeValue{name: v})
	}
	size := units.ItemSize(out.Item)
	t.Logf("worst-case record: %d bytes (%v), %v write units a status change", size, parts, units.WriteUnits(size))
	if units.WriteUnits(size) > 2 {
		t.Fatalf("worst-case record is %d bytes (%v): %v write units a status change, want at most 2", size, parts, units.WriteUnits(size))
	}
}
