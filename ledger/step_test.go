package ledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/ledger"
)

func claimed(t *testing.T, f fixture, id ledger.Key, d time.Duration) ledger.Lease {
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

// TestFailWithAStartedStepKeepsTheLease: a Fail that leaves an at-most-once
// step started (its request timed out on our side; the downstream may still
// apply it) keeps the lease's end on the record, and no claim, from any
// copy of the message, gets the event before it: a retry asks the step's
// check only once the earlier request can no longer take effect.
func TestFailWithAStartedStepKeepsTheLease(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	create(t, f, id)
	lease := claimed(t, f, id, time.Minute)
	// The lease value is the claim's: Fail must not trust it to know the
	// steps started since.
	if _, err := f.l.SaveSteps(t.Context(), lease, ledger.StepChange{Name: "sms", Status: ledger.StepStarted}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(10 * time.Second)
	rec, err := f.l.Fail(t.Context(), lease, "sms: request timed out", 0)
	if err != nil || rec.Status != ledger.Failed || rec.LeaseOwner != "" || !rec.LeaseUntil.Equal(lease.Until) {
		t.Fatalf("fail: %+v %v, want failed with lease_until %v kept", rec, err, lease.Until)
	}
	if rec.DueAt.Before(lease.Until) {
		t.Errorf("due_at %v before the kept lease's end %v: the reclaimer would look too early", rec.DueAt, lease.Until)
	}
	if !rec.LeaseLive(f.clock.Now()) {
		t.Error("LeaseLive is false for a failed record under a kept lease: the reclaimer would re-drive it")
	}
	_, err = f.l.Claim(t.Context(), id, time.Minute)
	var se *ledger.StateError
	if !errors.Is(err, ledger.ErrLeased) || !errors.As(err, &se) || se.Record.Status != ledger.Failed {
		t.Fatalf("claim right after the fail: %v, want ErrLeased (failed, lease kept)", err)
	}
	f.clock.Advance(lease.Until.Sub(f.clock.Now()) - time.Millisecond)
	if _, err := f.l.Claim(t.Context(), id, time.Minute); !errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("claim a millisecond before the lease ends: %v, want ErrLeased", err)
	}
	f.clock.Advance(time.Millisecond)
	next := claimed(t, f, id, time.Minute)
	if next.Record.Attempts != 2 || next.Record.Steps["sms"].Status != ledger.StepStarted {
		t.Fatalf("claim once the lease ended: %+v", next.Record)
	}
	// A fresh lease (the processor folds its step writes into it) costs the
	// one write, as any Fail.
	rec, err = f.l.SaveSteps(t.Context(), next, ledger.StepChange{Name: "email", Status: ledger.StepStarted})
	if err != nil {
		t.Fatal(err)
	}
	next.Record = rec
	f.meter.Reset()
	if rec, err = f.l.Fail(t.Context(), next, "email: request timed out", 0); err != nil || !rec.LeaseUntil.Equal(next.Until) {
		t.Fatalf("second fail: %+v %v", rec, err)
	}
	if snap := f.meter.Snapshot(); len(snap) != 1 || snap["DynamoDB.UpdateItem"] != 1 {
		t.Errorf("fail with a fresh lease cost %v, want one UpdateItem", snap)
	}
	// An operator's replay does not let the retry in early either.
	if rec, err = f.l.Replay(t.Context(), id); err != nil || rec.Status != ledger.Received || !rec.LeaseUntil.Equal(next.Until) {
		t.Fatalf("replay: %+v %v, want received with the lease's end kept", rec, err)
	}
	if _, err := f.l.Claim(t.Context(), id, time.Minute); !errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("claim after the replay: %v, want ErrLeased", err)
	}
	f.clock.Advance(time.Minute)
	claimed(t, f, id, time.Minute)
}

// TestFailWithoutAStartedStepFreesTheEvent: a Fail that leaves no step
// started (none was, the step's function said its effect did not happen,
// or its completion rides on the Fail) clears the lease as ever: the next
// claim need not wait.
func TestFailWithoutAStartedStepFreesTheEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		started bool // an at-most-once step was marked started before the Fail
		changes []ledger.StepChange
	}{
		{"no steps", false, nil},
		{"an at-least-once step done", false, []ledger.StepChange{{Name: "charge", Status: ledger.StepDone, Result: "ch_1"}}},
		{"the started step cleared", true, []ledger.StepChange{{Name: "sms"}}},
		{"the started step done", true, []ledger.StepChange{{Name: "sms", Status: ledger.StepDone, Result: "sms_1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			id := newID(t)
			create(t, f, id)
			lease := claimed(t, f, id, time.Minute)
			if tc.started {
				if _, err := f.l.SaveSteps(t.Context(), lease, ledger.StepChange{Name: "sms", Status: ledger.StepStarted}); err != nil {
					t.Fatal(err)
				}
			}
			rec, err := f.l.Fail(t.Context(), lease, "boom", 0, tc.changes...)
			if err != nil || rec.Status != ledger.Failed || rec.LeaseOwner != "" || !rec.LeaseUntil.IsZero() {
				t.Fatalf("fail: %+v %v, want failed with no lease", rec, err)
			}
			if next := claimed(t, f, id, time.Minute); next.Record.Attempts != 2 {
				t.Fatalf("immediate claim: %+v", next.Record)
			}
		})
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
		{Name: "utf8", Status: ledger.StepDone, Result: "caf\xc3"}, // DynamoDB would store U+FFFD
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

// A burial that leaves a step started (attempts spent while an at-most-once
// request timed out on our side) keeps the lease's end like Fail: an
// operator's replay right after must not let the check be asked before the
// request could still land.
func TestBuryWithAStartedStepKeepsTheLeaseEnd(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := newID(t)
	create(t, f, id)
	lease := claimed(t, f, id, time.Minute)
	rec, err := f.l.SaveSteps(t.Context(), lease, ledger.StepChange{Name: "sms", Status: ledger.StepStarted})
	if err != nil {
		t.Fatal(err)
	}
	lease.Record = rec
	rec, err = f.l.Bury(t.Context(), lease, "attempts exhausted: sms: request timed out")
	if err != nil || rec.Status != ledger.Dead || rec.LeaseOwner != "" || !rec.LeaseUntil.Equal(lease.Until) {
		t.Fatalf("bury: %+v %v, want dead with lease_until %v kept", rec, err, lease.Until)
	}
	if rec.LeaseLive(f.clock.Now()) {
		t.Error("a dead record counts as leased: the reclaimer would look at it")
	}
	if rec, err = f.l.Replay(t.Context(), id); err != nil || !rec.LeaseUntil.Equal(lease.Until) {
		t.Fatalf("replay: %+v %v", rec, err)
	}
	if _, err := f.l.Claim(t.Context(), id, time.Minute); !errors.Is(err, ledger.ErrLeased) {
		t.Fatalf("claim right after the replay: %v, want ErrLeased until the buried lease's end", err)
	}
	f.clock.Advance(time.Minute)
	claimed(t, f, id, time.Minute)

	// Without a started step a burial clears the lease as before.
	other := newID(t)
	create(t, f, other)
	l2 := claimed(t, f, other, time.Minute)
	if rec, err := f.l.Bury(t.Context(), l2, "permanent"); err != nil || !rec.LeaseUntil.IsZero() {
		t.Fatalf("bury without a started step: %+v %v", rec, err)
	}
}
