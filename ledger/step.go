package ledger

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// StepStatus is how far a step of an event's handler got, as recorded.
type StepStatus string

// A step is recorded started (an at-most-once step, before its effect runs)
// and done (with its result) once its effect has happened.
const (
	StepStarted StepStatus = "started"
	StepDone    StepStatus = "done"
)

// Step is what the record says about one named step.
type Step struct {
	Status StepStatus `json:"status"`
	Result string     `json:"result,omitempty"`
	At     time.Time  `json:"at,omitzero"` // when the ledger recorded the status
	// Started is when an at-most-once step done was recorded started: its
	// effect ran between Started and At. Zero for other steps.
	Started time.Time `json:"started,omitzero"`
	// Checked: recorded done on its check's word (StepChange.Checked).
	Checked bool `json:"checked,omitempty"`
}

// StepChange changes one step's entry. A lease holder's writes (SaveSteps,
// Complete, Fail, Bury) fold any number of them into their one UpdateItem,
// and Replay takes them so an operator can resolve a step. An empty Status
// removes the step's entry (the step will run again).
type StepChange struct {
	Name   string
	Status StepStatus
	Result string
	// Checked says a done step is recorded on its check's word: on a
	// retry, its check found the effect had happened, so it did not run.
	Checked bool
}

// Limits on steps. Each step is one attribute of the record, and the record
// must stay under 1 KB so that a status change costs one write unit: step
// results are meant for ids, not documents.
const (
	MaxStepName   = 64
	MaxStepResult = 256
)

// ValidStepName reports whether s may name a step (NameRule, at most
// MaxStepName bytes).
func ValidStepName(s string) bool { return namePattern.MatchString(s) }

func (c StepChange) validate() error {
	if !ValidStepName(c.Name) {
		return fmt.Errorf("%w: step name %q: want %s", ErrInvalid, c.Name, NameRule)
	}
	switch c.Status {
	case StepStarted, StepDone, "":
	default:
		return fmt.Errorf("%w: step %s: unknown status %q", ErrInvalid, c.Name, c.Status)
	}
	if len(c.Result) > MaxStepResult {
		return fmt.Errorf("%w: step %s: result of %d bytes, over %d (record ids, not documents)", ErrInvalid, c.Name, len(c.Result), MaxStepResult)
	}
	if !utf8.ValidString(c.Result) {
		return fmt.Errorf("%w: step %s: result is not valid UTF-8 (DynamoDB would store U+FFFD in its place)", ErrInvalid, c.Name)
	}
	return nil
}

// stepAttr is the record attribute holding a step's entry.
func stepAttr(name string) string { return "step#" + name }

// addSteps adds the step changes to p, each under its own name placeholder
// (#s0, #s1, ...). Changes to one name fold into the last. A step done that
// prior (the record as the writer knows it) shows started keeps that time.
func (p *exprParts) addSteps(changes []StepChange, now time.Time, prior map[string]Step) error {
	last := map[string]StepChange{}
	for _, c := range changes {
		if err := c.validate(); err != nil {
			return err
		}
		last[c.Name] = c
	}
	names := make([]string, 0, len(last))
	for n := range last {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, name := range names {
		c := last[name]
		ph := "#s" + strconv.Itoa(i)
		p.names[ph] = stepAttr(name)
		if c.Status == "" {
			p.remove = append(p.remove, ph)
			continue
		}
		v := map[string]types.AttributeValue{"s": dynamo.S(string(c.Status)), "t": dynamo.Millis(now)}
		if c.Result != "" {
			v["r"] = dynamo.S(c.Result)
		}
		if was := prior[name]; c.Status == StepDone && was.Status == StepStarted && !was.At.IsZero() {
			v["d"] = dynamo.N(max(0, now.Sub(was.At).Milliseconds())) // since started
		}
		if c.Checked && c.Status == StepDone {
			v["c"] = &types.AttributeValueMemberBOOL{Value: true}
		}
		p.vals[":s"+strconv.Itoa(i)] = &types.AttributeValueMemberM{Value: v}
		p.set = append(p.set, ph+" = :s"+strconv.Itoa(i))
	}
	return nil
}

// decodeSteps reads the record's step attributes.
func decodeSteps(item map[string]types.AttributeValue) map[string]Step {
	var out map[string]Step
	for k, v := range item {
		name, ok := strings.CutPrefix(k, "step#")
		if !ok {
			continue
		}
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			continue
		}
		st := Step{Status: StepStatus(dynamo.GetS(m.Value, "s")), Result: dynamo.GetS(m.Value, "r"), At: dynamo.GetMillis(m.Value, "t")}
		if d, ok := m.Value["d"]; ok && d != nil {
			st.Started = st.At.Add(-time.Duration(dynamo.GetN(m.Value, "d")) * time.Millisecond)
		}
		if c, ok := m.Value["c"].(*types.AttributeValueMemberBOOL); ok {
			st.Checked = c.Value
		}
		if out == nil {
			out = map[string]Step{}
		}
		out[name] = st
	}
	return out
}
