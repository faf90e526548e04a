package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/tools/bench"
)

func claimed(t *testing.T, f fixture, id ledger.ID, d time.Duration) ledger.Lease {
	t.Helper()
	lease, err := f.l.Claim(t.Context(), id, d)
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

func TestStepsRecordedUnderTheLease(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	create(t, f, id)
	lease := claimed(t, f, id, time.Minute)
	f.meter.Reset()
	rec, err := f.l.SaveSteps(t.Context(), lease,
		ledger.StepChange{Name: "charge", Status: ledger.StepDone, Result: "ch_1"},
		ledger.StepChange{Name: "notify", Status: ledger.StepStarted})
	if err != nil {
		t.Fatal(err)
	}
	if snap := f.meter.Snapshot(); snap["DynamoDB.UpdateItem"] != 1 || len(snap) != 1 {
		t.Errorf("SaveSteps cost %v, want one UpdateItem", snap)
	}
	if rec.Steps["charge"].Status != ledger.StepDone || rec.Steps["charge"].Result != "ch_1" || rec.Steps["notify"].Status != ledger.StepStarted {
		t.Fatalf("steps %+v", rec.Steps)
	}
	if !rec.Steps["charge"].At.Equal(f.clock.Now()) {
		t.Errorf("step time %v, want the ledger's clock %v", rec.Steps["charge"].At, f.clock.Now())
	}
	// The last completion rides on Complete.
	done, err := f.l.Complete(t.Context(), lease, ledger.StepChange{Name: "notify", Status: ledger.StepDone, Result: "ntf_1"})
	if err != nil || done.Status != ledger.Done || done.Steps["notify"].Result != "ntf_1" || done.Steps["charge"].Result != "ch_1" {
		t.Fatalf("complete: %+v %v", done, err)
	}
	got, _ := f.l.Get(t.Context(), id)
	if len(got.Steps) != 2 || got.Steps["notify"].Status != ledger.StepDone {
		t.Fatalf("read back %+v", got.Steps)
	}
}

func TestStepWritesRefusedOnceTheLeaseIsLost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	create(t, f, id)
	a := claimed(t, f, id, time.Second)
	f.clock.Advance(time.Second)
	b := claimed(t, f, id, time.Minute) // the takeover
	if _, err := f.l.SaveSteps(t.Context(), a, ledger.StepChange{Name: "charge", Status: ledger.StepDone}); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("old owner's SaveSteps: %v, want ErrLeaseLost", err)
	}
	if _, err := f.l.Complete(t.Context(), a, ledger.StepChange{Name: "charge", Status: ledger.StepDone}); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Fatalf("old owner's Complete: %v, want ErrLeaseLost", err)
	}
	if rec, _ := f.l.Get(t.Context(), id); len(rec.Steps) != 0 {
		t.Fatalf("the refused writes left steps %+v", rec.Steps)
	}
	if _, err := f.l.SaveSteps(t.Context(), b, ledger.StepChange{Name: "charge", Status: ledger.StepDone}); err != nil {
		t.Fatalf("new owner: %v", err)
	}
}

func TestFailFoldsAndClearsSteps(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	create(t, f, id)
	lease := claimed(t, f, id, time.Minute)
	if _, err := f.l.SaveSteps(t.Context(), lease, ledger.StepChange{Name: "sms", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	// The step's function reported its effect did not happen: clear it;
	// and an earlier step's completion rides along.
	rec, err := f.l.Fail(t.Context(), lease, "sms gateway refused", time.Minute,
		ledger.StepChange{Name: "sms"}, ledger.StepChange{Name: "charge", Status: ledger.StepDone, Result: "ch_9"})
	if err != nil || rec.Status != ledger.Failed {
		t.Fatalf("fail: %+v %v", rec, err)
	}
	if _, ok := rec.Steps["sms"]; ok || rec.Steps["charge"].Result != "ch_9" {
		t.Fatalf("steps %+v", rec.Steps)
	}
	next := claimed(t, f, id, time.Minute)
	if next.Record.Steps["charge"].Status != ledger.StepDone {
		t.Fatalf("claim does not carry the steps: %+v", next.Record.Steps)
	}
	if _, err := f.l.Bury(t.Context(), next, "indeterminate step sms: no check", ledger.StepChange{Name: "sms", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	// The operator resolves the step on replay.
	r, err := f.l.Replay(t.Context(), id, ledger.StepChange{Name: "sms", Status: ledger.StepDone, Result: "checked"})
	if err != nil || r.Status != ledger.Received || r.Steps["sms"].Result != "checked" || r.Steps["charge"].Result != "ch_9" {
		t.Fatalf("replay: %+v %v", r, err)
	}
}

func TestInvalidStepChangesWriteNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	create(t, f, id)
	lease := claimed(t, f, id, time.Minute)
	f.meter.Reset()
	for _, c := range []ledger.StepChange{
		{Name: "bad name", Status: ledger.StepDone},
		{Name: "ok", Status: ledger.StepDone, Result: strings.Repeat("x", ledger.MaxStepResult+1)},
	} {
		if _, err := f.l.Complete(t.Context(), lease, c); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", c.Name, err)
		}
	}
	if _, err := f.l.SaveSteps(t.Context(), lease); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("SaveSteps with nothing: %v", err)
	}
	if snap := f.meter.Snapshot(); len(snap) != 0 {
		t.Errorf("invalid changes reached DynamoDB: %v", snap)
	}
}

// TestRecordWithStepsStaysUnderOneKB: three steps with id-sized results
// keep the record under 1 KB, so every status change still costs one
// write unit.
func TestRecordWithStepsStaysUnderOneKB(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := ledger.ID{Source: "stripe", Tenant: "acme", Key: "evt_1NG8Du2eZvKYlo2CUI79vXWy"}
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
	if size := bench.ItemSize(out.Item); size > 1024 {
		t.Fatalf("record with three steps is %d bytes: status changes would cost %v write units", size, bench.WriteUnits(size))
	} else {
		t.Logf("record with three steps: %d bytes", size)
	}
}
