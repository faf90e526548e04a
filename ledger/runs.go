package ledger

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// Run is one run of the event's handler as the record keeps it. The record
// keeps the last MaxRuns runs, written by the writes that happen anyway:
// a claim starts a run, and the write that answers it (Complete, Fail,
// Release, Bury, Skip) ends it. A run without an end had no answer: it
// is in progress, or was interrupted (a crash, a timeout). The reclaimer
// ends such a run when it finds its lease expired (Reset, BuryStale).
type Run struct {
	Start   time.Time  `json:"start,omitzero"`
	End     time.Time  `json:"end,omitzero"`
	Outcome RunOutcome `json:"outcome,omitempty"`
	// Error is the start of the run's error (MaxRunError bytes); the
	// record's LastError has all of the last one.
	Error string `json:"error,omitempty"`
}

// RunOutcome is how a run ended.
type RunOutcome string

// How a run can end.
const (
	RunDone        RunOutcome = "done"        // Complete
	RunFailed      RunOutcome = "failed"      // Fail: the handler failed
	RunGivenBack   RunOutcome = "given_back"  // Release: cut short before the handler ran
	RunDead        RunOutcome = "dead"        // Bury
	RunSkipped     RunOutcome = "skipped"     // Skip: stale, done without running
	RunInterrupted RunOutcome = "interrupted" // no answer; the reclaimer found the lease expired
)

// MaxRuns is how many runs a record keeps; MaxRunError bounds each run's
// error. A run takes about 30 bytes of the record, 80 with an error.
const (
	MaxRuns     = 3
	MaxRunError = 48
)

// runCodes are the outcomes as stored: one letter each.
var runCodes = map[RunOutcome]string{
	RunDone: "d", RunFailed: "f", RunGivenBack: "g", RunDead: "x", RunSkipped: "s", RunInterrupted: "i",
}

// runSlots are the record's run attributes, newest first. A claim shifts
// them by one in its write: the oldest falls off, so a record never holds
// more than MaxRuns, however often its runs crash.
var runSlots = [MaxRuns]string{"run0", "run1", "run2"}

// startRun adds to a claim's update the shift of the run slots and the new
// run, begun at now. DynamoDB reads every operand before the update, so
// "run1 = run0, run0 = :new" moves the old run0 down.
func (p *exprParts) startRun(now time.Time) {
	for i := MaxRuns - 1; i > 0; i-- {
		p.set = append(p.set, runSlots[i]+" = if_not_exists("+runSlots[i-1]+", :norun)")
	}
	p.set = append(p.set, runSlots[0]+" = :run")
	p.vals[":norun"] = dynamo.S("")
	p.vals[":run"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"b": dynamo.Millis(now)}}
}

// endRun makes the write end the run rec's claim began, with outcome and
// the start of why. It writes nothing when rec shows no run in progress
// (claimed by a version that kept no runs).
func (p *exprParts) endRun(rec Record, outcome RunOutcome, why string, now time.Time) {
	cur, ok := rec.current()
	if !ok {
		return
	}
	v := map[string]types.AttributeValue{"b": dynamo.Millis(cur.Start), "d": dynamo.N(max(0, now.Sub(cur.Start).Milliseconds())), "o": dynamo.S(runCodes[outcome])}
	if why = trimTo(why, MaxRunError); why != "" {
		v["x"] = dynamo.S(why)
	}
	p.set = append(p.set, runSlots[0]+" = :runend")
	p.vals[":runend"] = &types.AttributeValueMemberM{Value: v}
}

// current is the record's newest run, if it has not ended.
func (r Record) current() (Run, bool) {
	if len(r.Runs) == 0 {
		return Run{}, false
	}
	last := r.Runs[len(r.Runs)-1]
	return last, last.End.IsZero() && !last.Start.IsZero()
}

// decodeRuns reads the run slots, oldest first. A run's end is stored as
// its duration ("d", milliseconds) and its outcome as a code ("o").
func decodeRuns(item map[string]types.AttributeValue) []Run {
	var out []Run
	for i := MaxRuns - 1; i >= 0; i-- {
		m, ok := item[runSlots[i]].(*types.AttributeValueMemberM)
		if !ok {
			continue // empty, or not written yet
		}
		r := Run{Start: dynamo.GetMillis(m.Value, "b"), Error: dynamo.GetS(m.Value, "x")}
		if code := dynamo.GetS(m.Value, "o"); code != "" {
			r.Outcome = RunOutcome(code)
			for o, c := range runCodes {
				if c == code {
					r.Outcome = o
				}
			}
			r.End = r.Start.Add(time.Duration(dynamo.GetN(m.Value, "d")) * time.Millisecond)
		}
		out = append(out, r)
	}
	return out
}

// trimTo cuts s to at most n bytes, at a character boundary, as valid
// UTF-8.
func trimTo(s string, n int) string {
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "?")
}
