package ledger_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/version"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// putFormat1 writes id's record as the code before 0.1.0 did: no format,
// no release, and only the run counters in extra (none before the
// failures and interrupted counters existed). A processing record's
// lease has run out.
func putFormat1(t *testing.T, f fixture, id ledger.Key, status ledger.Status, attempts int64, extra map[string]types.AttributeValue) {
	t.Helper()
	now := f.clock.Now()
	item := map[string]types.AttributeValue{
		"pk": s(id.PK()), "sk": s("r"), "created_by": s("old"), "source": s(id.Source), "tenant": s(id.Tenant), "event_key": s(id.ID),
		"event_type": s(createdAs.Type), "body_sha256": s(createdAs.BodySHA256), "status": s(string(status)),
		"attempts": n(attempts), "reclaims": n(0), "ver": n(attempts*2 + 1),
		"created_at": n(now.Add(-time.Hour).UnixMilli()), "updated_at": n(now.UnixMilli()), "expires_at": n(now.Add(24 * time.Hour).Unix()),
	}
	if !status.Terminal() || status == ledger.Done {
		item["due_shard"], item["due_at"] = n(0), n(now.Add(-time.Minute).UnixMilli())
	}
	if status == ledger.Processing {
		item["lease_owner"], item["lease_until"] = s("old-worker"), n(now.Add(-time.Second).UnixMilli())
	}
	for k, v := range extra {
		item[k] = v
	}
	if _, err := f.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &f.table, Item: item}); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, f fixture, id ledger.Key) ledger.Record {
	t.Helper()
	rec, err := f.l.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestFormat1Failures: a record without the failures counter counts every
// run the code that wrote it spent MaxAttempts on: all but the one that
// succeeded and those counted interrupted (the run in progress included).
func TestFormat1Failures(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, c := range []struct {
		status   ledger.Status
		attempts int64
		extra    map[string]types.AttributeValue
		want     int
	}{
		{ledger.Failed, 3, nil, 3},
		{ledger.Dead, 5, nil, 5},
		{ledger.Processing, 4, nil, 3},
		{ledger.Done, 2, nil, 1},
		{ledger.Received, 0, nil, 0},
		{ledger.Received, 2, nil, 2}, // reset by the reclaimer: that code spent two
		// Written after interrupted existed, never failed: none.
		{ledger.Processing, 3, map[string]types.AttributeValue{"interrupted": n(3)}, 0},
		{ledger.Failed, 3, map[string]types.AttributeValue{"failures": n(1), "interrupted": n(2)}, 1},
	} {
		id := newID(t)
		putFormat1(t, f, id, c.status, c.attempts, c.extra)
		if rec := get(t, f, id); rec.Failures != c.want || rec.Format != 1 {
			t.Errorf("%s, %d attempts, %v: failures %d (format %d), want %d (format 1)", c.status, c.attempts, c.extra, rec.Failures, rec.Format, c.want)
		}
	}
}

// TestFormat1Interrupted: a record without the interrupted counter knows
// of none but the run it shows in progress.
func TestFormat1Interrupted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, c := range []struct {
		status ledger.Status
		want   int
	}{{ledger.Processing, 1}, {ledger.Failed, 0}, {ledger.Received, 0}, {ledger.Done, 0}, {ledger.Dead, 0}} {
		id := newID(t)
		putFormat1(t, f, id, c.status, 2, nil)
		if rec := get(t, f, id); rec.Interrupted != c.want {
			t.Errorf("%s: interrupted %d, want %d", c.status, rec.Interrupted, c.want)
		}
	}
}

// TestFormat1GivenBack: a record without given_back had none given back,
// so EarlierRun names its interrupted runs as runs that may have reached
// the handler.
func TestFormat1GivenBack(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	// Released once by code that counted interruptions but not give-backs.
	putFormat1(t, f, id, ledger.Failed, 1, map[string]types.AttributeValue{"interrupted": n(1)})
	rec := get(t, f, id)
	if rec.GivenBack != 0 || rec.Failures != 0 || rec.EarlierRun() != "1 run interrupted" {
		t.Fatalf("given back %d, failures %d, earlier run %q; want 0, 0, \"1 run interrupted\"", rec.GivenBack, rec.Failures, rec.EarlierRun())
	}
}

// TestFormat1CountersSurviveTheFirstWrite: the first write to a format-1
// record, a claim or a reclaimer transition, stores the counters as
// decoded and marks it format 2. Otherwise the next failure would count
// from zero and the handler get a fresh MaxAttempts.
func TestFormat1CountersSurviveTheFirstWrite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()

	failed := newID(t)
	putFormat1(t, f, failed, ledger.Failed, 3, nil)
	lease, err := f.l.Claim(ctx, failed, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := countsOf(lease.Record); got != (counts{4, 3, 1}) || lease.Record.Format != ledger.Format {
		t.Fatalf("claimed: %v format %d, want 4 attempts, 3 failures, 1 interrupted, format %d", got, lease.Record.Format, ledger.Format)
	}
	rec, err := f.l.Fail(ctx, lease, "downstream 503", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := countsOf(rec); got != (counts{4, 4, 0}) {
		t.Fatalf("after a failure: %v, want 4 attempts, 4 failures", got)
	}

	// An old worker's run in progress, its lease run out: the takeover
	// counts it interrupted.
	running := newID(t)
	putFormat1(t, f, running, ledger.Processing, 2, nil)
	lease, err = f.l.Claim(ctx, running, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := countsOf(lease.Record); got != (counts{3, 1, 2}) {
		t.Fatalf("taken over: %v, want 3 attempts, 1 failure, 2 interrupted", got)
	}

	// One still leased is refused at the first write's price.
	leased := newID(t)
	putFormat1(t, f, leased, ledger.Processing, 1, map[string]types.AttributeValue{"lease_until": n(f.clock.Now().Add(time.Minute).UnixMilli())})
	f.meter.Reset()
	if _, err := f.l.Claim(ctx, leased, time.Minute); !errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("claim of a leased record: %v, want ErrLeased", err)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.UpdateItem"] != 1 || len(snap) != 1 {
		t.Errorf("refused claim: %v, want one UpdateItem", snap)
	}

	// The reclaimer's first write does the same.
	requeued := newID(t)
	putFormat1(t, f, requeued, ledger.Failed, 2, nil)
	if rec, err = f.l.Requeue(ctx, get(t, f, requeued), f.clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	raw, err := f.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &f.table, Key: map[string]types.AttributeValue{"pk": s(requeued.PK()), "sk": s("r")}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := raw.Item["failures"].(*types.AttributeValueMemberN); !ok || v.Value != "2" || rec.Format != ledger.Format {
		t.Fatalf("requeued: stored failures %v, format %d; want 2, %d", raw.Item["failures"], rec.Format, ledger.Format)
	}
}

// TestRecordsCarryFormatAndRelease: Create and every transition store the
// format and the release that wrote the record.
func TestRecordsCarryFormatAndRelease(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	id := newID(t)
	create(t, f, id)
	key := map[string]types.AttributeValue{"pk": s(id.PK()), "sk": s("r")}
	check := func(what string) {
		t.Helper()
		out, err := f.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &f.table, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		fm, _ := out.Item["format"].(*types.AttributeValueMemberN)
		rel, _ := out.Item["release"].(*types.AttributeValueMemberS)
		if fm == nil || fm.Value != strconv.Itoa(ledger.Format) || rel == nil || rel.Value != version.Version {
			t.Fatalf("%s: format %v, release %v; want %d, %s", what, out.Item["format"], out.Item["release"], ledger.Format, version.Version)
		}
	}
	check("create")
	// As if an earlier release wrote it last: each write says this one.
	if _, err := f.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &f.table, Key: key,
		UpdateExpression: aws.String("SET #r = :old"), ExpressionAttributeNames: map[string]string{"#r": "release"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":old": s("0.0.1")}}); err != nil {
		t.Fatal(err)
	}
	lease, err := f.l.Claim(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	check("claim")
	if _, err := f.l.Complete(ctx, lease); err != nil {
		t.Fatal(err)
	}
	check("complete")
}

// TestUseFormat: a cold start reads the table's format item once, raises
// an absent or older one with one conditional write (with the call its
// role has), and refuses a newer one, naming it and the fix, without
// lowering it.
func TestUseFormat(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	key := map[string]types.AttributeValue{"pk": s("ledger#meta"), "sk": s("format")}
	put := func(format int64, release string) {
		t.Helper()
		if _, err := f.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &f.table,
			Item: map[string]types.AttributeValue{"pk": key["pk"], "sk": key["sk"], "format": n(format), "release": s(release)}}); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() map[string]types.AttributeValue {
		t.Helper()
		out, err := f.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &f.table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}

	// A reader writes nothing, even to a new table.
	if got, err := f.l.UseFormat(ctx, ledger.ReadOnly); err != nil || got.Format != 0 || stored() != nil {
		t.Fatalf("read only on a new table: %+v %v, item %v", got, err, stored())
	}
	for _, w := range []ledger.FormatWrite{ledger.WriteByPut, ledger.WriteByUpdate} {
		for _, before := range []int64{0, 1} {
			if before == 0 {
				f.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &f.table, Key: key})
			} else {
				put(before, "")
			}
			f.meter.Reset()
			got, err := f.l.UseFormat(ctx, w)
			if err != nil || got.Format != ledger.Format || got.Release != version.Version {
				t.Fatalf("write %d over format %d: %+v %v", w, before, got, err)
			}
			if snap := f.meter.Snapshot(); snap["DynamoDB.GetItem"] != 1 || snap["DynamoDB.PutItem"]+snap["DynamoDB.UpdateItem"] != 1 {
				t.Errorf("write %d over format %d: %v, want one read and one write", w, before, snap)
			}
			if item := stored(); item["format"].(*types.AttributeValueMemberN).Value != strconv.Itoa(ledger.Format) {
				t.Fatalf("write %d over format %d: stored %v", w, before, item)
			}
		}
	}
	f.meter.Reset()
	if _, err := f.l.UseFormat(ctx, ledger.WriteByUpdate); err != nil {
		t.Fatal(err)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.GetItem"] != 1 || len(snap) != 1 {
		t.Errorf("at this format: %v, want one GetItem", snap)
	}

	put(ledger.Format+1, "9.1.0")
	for _, w := range []ledger.FormatWrite{ledger.ReadOnly, ledger.WriteByPut, ledger.WriteByUpdate} {
		_, err := f.l.UseFormat(ctx, w)
		var fe *ledger.FormatError
		if !errors.Is(err, ledger.ErrNewerFormat) || !errors.As(err, &fe) {
			t.Fatalf("write %d over a newer format: %v, want a FormatError", w, err)
		}
		for _, want := range []string{"format " + strconv.Itoa(ledger.Format+1), "hookledger 9.1.0", "v9.1.0 or later", `CHANGELOG.md, "Rolling back"`, f.table} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %q", err, want)
			}
		}
	}
	if item := stored(); item["format"].(*types.AttributeValueMemberN).Value != strconv.Itoa(ledger.Format+1) {
		t.Fatalf("the newer format was lowered: %v", item)
	}
}
