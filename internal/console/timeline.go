package console

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
)

// Timeline is one event's story as its record tells it: received, the wait
// in the queue, each run kept with the steps it recorded, and how it ended.
type Timeline struct {
	Record ledger.Record
	// Wait is the time from the receiver's answer to the first run, when
	// the record still keeps that run (WaitKnown).
	Wait      time.Duration
	WaitKnown bool
	Runs      []RunView
	// Earlier counts the runs begun (since the last replay) that the
	// record no longer keeps.
	Earlier int
	// Before are the steps recorded before the oldest run kept.
	Before []StepView
	Steps  []StepView // every step, by time
	// Trace is the event's trace id, from its first delivery's header.
	Trace string
	// Indeterminate is the step the event is dead on, "" when none, and
	// its downstream key.
	Indeterminate, IndeterminateKey string
	// Logs is a CloudWatch Logs Insights query for the event's log lines:
	// each delivery's answer (duplicates included) and each run's outcome.
	Logs string
}

// RunView is one run of the handler.
type RunView struct {
	ledger.Run
	// State says how the run stands: its outcome, "running", or "no
	// answer" (it died: a crash, a timeout).
	State   string
	Checked bool // a check answered for one of its steps
	Steps   []StepView
}

// StepView is one step as recorded.
type StepView struct {
	ledger.Step
	Name string
	// Key is the step's downstream idempotency key.
	Key string
	// Error is the error of the run that ended while the step was started
	// and not done: the run failed in it, or died in it.
	Error string
}

// Class is the run's state as a CSS class.
func (v RunView) Class() string { return strings.ReplaceAll(v.State, " ", "-") }

// Build tells rec's story as of now.
func Build(rec ledger.Record, now time.Time) Timeline {
	t := Timeline{Record: rec, Logs: logsQuery(rec.Key), Trace: trace.ID(rec.Trace)}
	if name, ok := strings.CutPrefix(rec.LastError, "indeterminate step "); ok && rec.Status == ledger.Dead {
		t.Indeterminate, _, _ = strings.Cut(name, ":")
		t.IndeterminateKey = engine.DownstreamKey(rec.Source, rec.Tenant, rec.ID, t.Indeterminate)
	}
	for name, st := range rec.Steps {
		t.Steps = append(t.Steps, StepView{Step: st, Name: name, Key: engine.DownstreamKey(rec.Source, rec.Tenant, rec.ID, name)})
	}
	// A step belongs to the run that recorded it last: the run that
	// started an at-most-once step, or the one that recorded it done.
	slices.SortFunc(t.Steps, func(a, b StepView) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	t.Earlier = max(0, rec.Attempts-len(rec.Runs))
	if len(rec.Runs) > 0 && t.Earlier == 0 && rec.ReplayedAt.IsZero() {
		t.Wait, t.WaitKnown = rec.Runs[0].Start.Sub(rec.CreatedAt), true
	}
	for i, r := range rec.Runs {
		v := RunView{Run: r, State: string(r.Outcome)}
		last := i == len(rec.Runs)-1
		switch {
		case r.Outcome != "":
		case last && rec.Status == ledger.Processing && rec.LeaseLive(now):
			v.State = "running"
		default:
			v.State = "no answer"
		}
		t.Runs = append(t.Runs, v)
	}
	for i := range t.Steps {
		s := &t.Steps[i]
		j := runAt(rec.Runs, s.At)
		if j < 0 {
			t.Before = append(t.Before, *s)
			continue
		}
		r := &t.Runs[j]
		if s.Status == ledger.StepStarted && r.Outcome != ledger.RunDone {
			s.Error = runError(r.Run, r.State, rec)
		}
		r.Checked = r.Checked || s.Checked
		r.Steps = append(r.Steps, *s)
	}
	return t
}

// runAt is the index of the run kept that was under way at t: the last
// begun at or before it; -1 when t is before them all.
func runAt(runs []ledger.Run, t time.Time) int {
	at := -1
	for i, r := range runs {
		if !r.Start.After(t) {
			at = i
		}
	}
	return at
}

// runError is what to show as the error of a run a step was left started
// in.
func runError(r ledger.Run, state string, rec ledger.Record) string {
	switch {
	case state == "running":
		return ""
	case r.Outcome == "" || r.Outcome == ledger.RunInterrupted:
		return "the run died in this step (no answer; a crash or a timeout)"
	case r.Error != "" && strings.HasPrefix(rec.LastError, r.Error):
		return rec.LastError
	}
	return r.Error
}

// logsQuery is a Logs Insights query for the event's lines in the
// receiver's and the processor's log groups. Repeated deliveries are
// answered from the ledger without a write: the receiver's line (result
// duplicate) is the only trace of each.
func logsQuery(id ledger.Key) string {
	return fmt.Sprintf("fields @timestamp, @log, msg, result, outcome, trace_id\n| filter source = %s and tenant = %s and event_id = %s\n| sort @timestamp asc",
		strconv.Quote(id.Source), strconv.Quote(id.Tenant), strconv.Quote(id.ID))
}
