package engine

import (
	"context"
	"errors"
	"testing"
)

// The Trace hook sees each step begin, with its downstream key, and end:
// whether its function ran, and the step's error. A step recorded done
// ends without running; an indeterminate one ends with its error.
func TestTraceHookSeesEachStep(t *testing.T) {
	t.Parallel()
	type seen struct {
		name, key string
		ran       bool
		err       error
	}
	var got []seen
	cfg := Config{Store: &memStore{}, Attempt: 2, Key: func(n string) string { return "key-" + n },
		Recorded: map[string]State{"done": {Status: Done, Result: "r"}, "blind": {Status: Started}},
		Trace: func(name, key string) func(bool, error) {
			return func(ran bool, err error) { got = append(got, seen{name, key, ran, err}) }
		}}
	r := New(cfg)
	var n int
	failing := func(context.Context, string) (string, error) { n++; return "", errors.New("downstream 503") }
	r.Step(t.Context(), Spec{Name: "done"}, effect(&n, "x"))
	r.Step(t.Context(), Spec{Name: "runs"}, effect(&n, "y"))
	r.Step(t.Context(), Spec{Name: "fails"}, failing)
	r2 := New(cfg)
	r2.Step(t.Context(), Spec{Name: "blind", Mode: AtMostOnce}, effect(&n, "z"))
	if len(got) != 4 {
		t.Fatalf("hook saw %d steps, want 4: %+v", len(got), got)
	}
	if g := got[0]; g.name != "done" || g.key != "key-done" || g.ran || g.err != nil {
		t.Errorf("a step recorded done: %+v, want not run, no error", g)
	}
	if g := got[1]; g.name != "runs" || !g.ran || g.err != nil {
		t.Errorf("a step that runs: %+v", g)
	}
	if g := got[2]; g.name != "fails" || !g.ran || g.err == nil {
		t.Errorf("a failing step: %+v, want ran with its error", g)
	}
	var indet *IndeterminateError
	if g := got[3]; g.name != "blind" || g.ran || !errors.As(g.err, &indet) {
		t.Errorf("an at-most-once step started before, without a check: %+v, want an indeterminate error, not run", g)
	}
}
