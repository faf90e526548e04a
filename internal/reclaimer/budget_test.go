package reclaimer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

// crash claims id as a worker that then dies, and lets its lease run out
// and the record come due.
func (f *fixture) crash(t *testing.T, id ledger.Key) {
	t.Helper()
	if _, err := f.l.Claim(t.Context(), id, 30*time.Second); err != nil {
		t.Fatalf("claim %s: %v", id.ID, err)
	}
	rec := f.get(t, id)
	// The reclaimer looks when the record is due (after its backoff) and
	// the dead worker's lease is over.
	wait := max(time.Minute, rec.DueAt.Sub(f.clock.Now())) + time.Minute
	f.clock.Advance(wait)
}

// TestResetsAfterCrashesNeverBuryTheEvent: six workers in a row die holding
// the event, and the reclaimer takes each expired lease back and re-drives
// it; the seventh run completes it. The event ends done: crashes are not
// failures, and the reclaimer no longer buries an event after five
// reclaims.
func TestResetsAfterCrashesNeverBuryTheEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.event(t, "evt_six_crashes")
	for i := 1; i <= 6; i++ {
		f.crash(t, id)
		rep := f.run(t)
		rec := f.get(t, id)
		if rep.Reset != 1 || rec.Status != ledger.Received || rec.Reclaims != i {
			t.Fatalf("crash %d: report %+v, record %s with %d reclaims: %s", i, rep, rec.Status, rec.Reclaims, rec.LastError)
		}
		if keys := f.drain(t); len(keys) != 1 {
			t.Fatalf("crash %d: queued %v", i, keys)
		}
	}
	lease, err := f.l.Claim(t.Context(), id, time.Minute)
	if err != nil {
		t.Fatalf("the seventh run could not claim it: %v", err)
	}
	if _, err := f.l.Complete(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	rec := f.get(t, id)
	if rec.Status != ledger.Done || rec.Attempts != 7 || rec.Interrupted != 6 || rec.Failures != 0 {
		t.Fatalf("%s after %d attempts (%d interrupted, %d failures), want done after 7 (6 interrupted, none failed)", rec.Status, rec.Attempts, rec.Interrupted, rec.Failures)
	}
}

// TestInterruptedPastItsGiveUpTimeIsDead: an event whose every run is
// interrupted is re-driven until its give-up time (a day before it
// expires; here, with a 48-hour retention, 24 hours after it was
// received), not one look earlier, and then ends dead before it expires,
// with a cause that says it gave up, counts the interrupted runs and tells
// the operator what to do.
func TestInterruptedPastItsGiveUpTimeIsDead(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cfg := awstest.Config(t)
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: awstest.Table(t, cfg), Shards: 1, Retention: 48 * time.Hour, ReclaimAfter: time.Minute, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	f.l, f.h.Ledger = l, l
	id := f.event(t, "evt_always_interrupted")
	created := f.get(t, id)
	giveUp := created.CreatedAt.Add(24 * time.Hour)
	var rec ledger.Record
	crashes := 0
	for rec.Status != ledger.Dead {
		if rec = f.get(t, id); rec.Status != ledger.Dead && rec.Status != ledger.Processing {
			f.crash(t, id)
			crashes++
		}
		f.run(t)
		rec = f.get(t, id)
		if rec.Status == ledger.Dead && f.clock.Now().Before(giveUp) {
			t.Fatalf("dead %v before its give-up time, after %d crashes: %s", giveUp.Sub(f.clock.Now()), crashes, rec.LastError)
		}
		if !f.clock.Now().Before(created.ExpiresAt) {
			t.Fatalf("not dead by its expiry: %s after %d crashes", rec.Status, crashes)
		}
	}
	if left := created.ExpiresAt.Sub(f.clock.Now()); left < 23*time.Hour {
		t.Errorf("dead %v before it expires; want about a day left for the operator", left)
	}
	if rec.Interrupted != crashes || rec.Failures != 0 {
		t.Errorf("%d interrupted runs and %d failures on the record, want the %d crashes and none", rec.Interrupted, rec.Failures, crashes)
	}
	for _, want := range []string{"gave up", "interrupted runs", "0 failures", "not failures of the handler", "hookledger replay --source stripe --tenant acme --id evt_always_interrupted"} {
		if !strings.Contains(rec.LastError, want) {
			t.Errorf("cause %q does not say %q", rec.LastError, want)
		}
	}
}

// TestReplayStartsTheGiveUpWindowAgain: an operator replays an event that
// went dead at its give-up time, a day before it expires. The replay gives
// it half the time left (here 12 hours) rather than burying it at the
// reclaimer's next look, and it still ends dead before it expires.
func TestReplayStartsTheGiveUpWindowAgain(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.event(t, "evt_replayed_late")
	created := f.get(t, id)
	f.clock.Advance(created.ExpiresAt.Sub(f.clock.Now()) - reclaimer.ExpiryMargin) // the original give-up time
	f.run(t)
	if rec := f.get(t, id); rec.Status != ledger.Dead {
		t.Fatalf("at its give-up time: %s", rec.Status)
	}
	f.drain(t)
	replayed, err := f.l.Replay(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	giveUp := reclaimer.GiveUpAt(replayed)
	if want := replayed.ReplayedAt.Add(12 * time.Hour); !giveUp.Equal(want) {
		t.Fatalf("give-up time after the replay %v, want 12 hours after it (%v)", giveUp, want)
	}
	f.clock.Advance(2 * time.Minute) // the replayed message waits behind a backlog
	if rep := f.run(t); rep.Requeued != 1 || rep.Buried != 0 {
		t.Fatalf("right after the replay: %+v, want it re-driven, not buried", rep)
	}
	f.clock.Advance(giveUp.Sub(f.clock.Now()))
	f.run(t)
	rec := f.get(t, id)
	if rec.Status != ledger.Dead || !strings.Contains(rec.LastError, "since its replay at") {
		t.Fatalf("at the replay's give-up time: %s: %s", rec.Status, rec.LastError)
	}
}
