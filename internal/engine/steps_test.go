package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// memStore records saves; failing makes every save fail as a lost lease.
type memStore struct {
	saves   [][]Change
	lost    bool
	failErr error
}

var errLost = errors.New("lease lost")

func (m *memStore) Save(_ context.Context, c []Change) error {
	if m.lost {
		return errLost
	}
	if m.failErr != nil {
		return m.failErr
	}
	m.saves = append(m.saves, append([]Change(nil), c...))
	return nil
}

func (m *memStore) LeaseLost(err error) bool { return errors.Is(err, errLost) }

func newRun(store *memStore, attempt int, rec map[string]State) *Run {
	return New(Config{Store: store, Recorded: rec, Attempt: attempt, Key: func(n string) string { return "key-" + n }})
}

func effect(counter *int, result string) Func {
	return func(ctx context.Context, key string) (string, error) {
		*counter++
		return result, nil
	}
}

func TestAtLeastOnceFoldsCompletionIntoTheNextWrite(t *testing.T) {
	t.Parallel()
	s := &memStore{}
	r := newRun(s, 1, nil)
	var a, b int
	if res, err := r.Step(t.Context(), Spec{Name: "a"}, effect(&a, "ra")); err != nil || res != "ra" {
		t.Fatal(res, err)
	}
	if len(s.saves) != 0 {
		t.Fatalf("the first step's completion was saved at once: %v (it rides on the next write)", s.saves)
	}
	if _, err := r.Step(t.Context(), Spec{Name: "b"}, effect(&b, "rb")); err != nil {
		t.Fatal(err)
	}
	if len(s.saves) != 1 || s.saves[0][0] != (Change{Name: "a", Status: Done, Result: "ra"}) {
		t.Fatalf("before step b: saves %v, want a's completion", s.saves)
	}
	if p := r.Pending(); len(p) != 1 || p[0].Name != "b" {
		t.Fatalf("pending %v, want b's completion for the final write", p)
	}
}

func TestRecordedDoneDoesNotRun(t *testing.T) {
	t.Parallel()
	var n int
	r := newRun(&memStore{}, 2, map[string]State{"a": {Status: Done, Result: "earlier"}})
	res, err := r.Step(t.Context(), Spec{Name: "a", Mode: AtMostOnce}, effect(&n, "new"))
	if err != nil || res != "earlier" || n != 0 {
		t.Fatalf("res %q err %v runs %d", res, err, n)
	}
	if got, ok := r.Result("a"); !ok || got != "earlier" {
		t.Fatalf("Result %q %v", got, ok)
	}
}

func TestAtMostOnceMarksStartedBeforeRunning(t *testing.T) {
	t.Parallel()
	s := &memStore{}
	r := newRun(s, 1, nil)
	var n int
	r.Step(t.Context(), Spec{Name: "a"}, effect(&n, "ra"))
	fn := func(ctx context.Context, key string) (string, error) {
		if len(s.saves) != 1 {
			t.Errorf("the function ran before started was saved")
		}
		return "rb", nil
	}
	if _, err := r.Step(t.Context(), Spec{Name: "b", Mode: AtMostOnce}, fn); err != nil {
		t.Fatal(err)
	}
	want := []Change{{Name: "a", Status: Done, Result: "ra"}, {Name: "b", Status: Started}}
	if len(s.saves) != 1 || len(s.saves[0]) != 2 || s.saves[0][0] != want[0] || s.saves[0][1] != want[1] {
		t.Fatalf("saves %v, want one write %v", s.saves, want)
	}
}

func TestStartedAtMostOnceStep(t *testing.T) {
	t.Parallel()
	started := map[string]State{"b": {Status: Started}}
	for _, tc := range []struct {
		name      string
		check     Check
		wantRuns  int
		wantErr   string
		wantIndet bool
		wantDone  bool
	}{
		{"no check", nil, 0, "indeterminate step b", true, false},
		{"check finds it", func(context.Context, string) (string, error) { return "found", nil }, 0, "", false, true},
		{"check says not done", func(context.Context, string) (string, error) { return "", ErrNotDone }, 1, "", false, true},
		{"check cannot tell", func(context.Context, string) (string, error) { return "", ErrIndeterminate }, 0, "indeterminate step b", true, false},
		{"check fails", func(context.Context, string) (string, error) { return "", errors.New("timeout") }, 0, "check of step b failed", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRun(&memStore{}, 2, started)
			var n int
			_, err := r.Step(t.Context(), Spec{Name: "b", Mode: AtMostOnce, Check: tc.check}, effect(&n, "rb"))
			if n != tc.wantRuns {
				t.Errorf("ran %d times, want %d", n, tc.wantRuns)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			if (r.Indeterminate() != nil) != tc.wantIndet {
				t.Errorf("indeterminate %v, want %v", r.Indeterminate(), tc.wantIndet)
			}
			if _, done := r.Result("b"); done != tc.wantDone {
				t.Errorf("done %v, want %v", done, tc.wantDone)
			}
			if tc.wantIndet {
				// Nothing else runs after an indeterminate step.
				if _, err := r.Step(t.Context(), Spec{Name: "c"}, effect(&n, "rc")); err == nil || n != tc.wantRuns {
					t.Errorf("a later step ran after the event became indeterminate")
				}
			}
		})
	}
}

func TestAtLeastOnceCheckSkipsKnownRepeats(t *testing.T) {
	t.Parallel()
	found := func(context.Context, string) (string, error) { return "ch_1", nil }
	var n int
	// First attempt: the check is not asked; the step runs.
	r := newRun(&memStore{}, 1, nil)
	r.Step(t.Context(), Spec{Name: "charge", Check: found}, effect(&n, "ch_1"))
	// A retry: the check finds it, no repeat.
	r2 := newRun(&memStore{}, 2, nil)
	res, err := r2.Step(t.Context(), Spec{Name: "charge", Check: found}, effect(&n, "ch_2"))
	if err != nil || res != "ch_1" || n != 1 {
		t.Fatalf("retry: res %q err %v runs %d", res, err, n)
	}
	// A retry whose check fails runs the step again (at-least-once may).
	r3 := newRun(&memStore{}, 3, nil)
	broken := func(context.Context, string) (string, error) { return "", errors.New("timeout") }
	if _, err := r3.Step(t.Context(), Spec{Name: "charge", Check: broken}, effect(&n, "ch_1")); err != nil || n != 2 {
		t.Fatalf("broken check: err %v runs %d", err, n)
	}
}

func TestNotDoneFromTheFunctionClearsTheMark(t *testing.T) {
	t.Parallel()
	r := newRun(&memStore{}, 1, nil)
	_, err := r.Step(t.Context(), Spec{Name: "sms", Mode: AtMostOnce}, func(context.Context, string) (string, error) {
		return "", errors.Join(errors.New("gateway refused the request"), ErrNotDone)
	})
	if err == nil {
		t.Fatal("no error")
	}
	if p := r.Pending(); len(p) != 1 || p[0] != (Change{Name: "sms", Status: Clear}) {
		t.Fatalf("pending %v, want the started mark cleared", p)
	}
}

func TestLeaseLostStopsTheRun(t *testing.T) {
	t.Parallel()
	s := &memStore{}
	r := newRun(s, 1, nil)
	var n int
	r.Step(t.Context(), Spec{Name: "a"}, effect(&n, "ra"))
	s.lost = true
	if _, err := r.Step(t.Context(), Spec{Name: "b"}, effect(&n, "rb")); !errors.Is(err, errLost) || n != 1 {
		t.Fatalf("err %v runs %d: the step must not run once the lease is lost", err, n)
	}
	if !r.LeaseLost() {
		t.Fatal("LeaseLost false")
	}
	if _, err := r.Step(t.Context(), Spec{Name: "c"}, effect(&n, "rc")); err == nil || n != 1 {
		t.Fatalf("a later step ran after the lease was lost")
	}
}

func TestMisuseIsPermanent(t *testing.T) {
	t.Parallel()
	r := newRun(&memStore{}, 1, nil)
	var n int
	r.Step(t.Context(), Spec{Name: "a"}, effect(&n, "ra"))
	for name, step := range map[string]func() error{
		"bad name": func() error { _, err := r.Step(t.Context(), Spec{Name: "has space"}, effect(&n, "")); return err },
		"twice":    func() error { _, err := r.Step(t.Context(), Spec{Name: "a"}, effect(&n, "")); return err },
		"too large": func() error {
			_, err := r.Step(t.Context(), Spec{Name: "big"}, effect(&n, strings.Repeat("x", MaxResultBytes+1)))
			return err
		},
	} {
		var p PermanentError
		if err := step(); !errors.As(err, &p) {
			t.Errorf("%s: %v, want a permanent error", name, err)
		}
	}
	// Nested steps are refused.
	_, err := r.Step(t.Context(), Spec{Name: "outer"}, func(ctx context.Context, key string) (string, error) {
		_, err := r.Step(ctx, Spec{Name: "inner"}, effect(&n, ""))
		return "", err
	})
	var p PermanentError
	if !errors.As(err, &p) {
		t.Errorf("nested step: %v", err)
	}
	// Results add up: the whole event stays small.
	r2 := newRun(&memStore{}, 1, nil)
	var total error
	for i := 0; i < 4 && total == nil; i++ {
		_, total = r2.Step(t.Context(), Spec{Name: "s" + string(rune('a'+i))}, effect(&n, strings.Repeat("x", 200)))
	}
	if !errors.As(total, &p) {
		t.Errorf("four 200-byte results: %v, want a permanent error over %d bytes", total, MaxTotalBytes)
	}
}

func TestNilRunSaysWhatToDo(t *testing.T) {
	t.Parallel()
	var r *Run
	if _, err := r.Step(t.Context(), Spec{Name: "a"}, nil); !errors.Is(err, ErrNoEngine) {
		t.Fatal(err)
	}
}

// TestNamesThatDoNotFitAreRefusedBeforeTheEffect: the budget counts names
// and results, and a step whose name does not fit in what is left is
// refused before its function runs, so names alone never fail an event
// after an effect.
func TestNamesThatDoNotFitAreRefusedBeforeTheEffect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		steps    int
		nameLen  int
		result   int
		wantRuns int // effects before the refused step (steps, when all fit)
	}{
		{"eight 64-byte names fill it exactly", 8, 64, 0, 8},
		{"nine 64-byte names", 9, 64, 0, 8},
		{"four 60-byte names with 100-byte results", 4, 60, 100, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRun(&memStore{}, 1, nil)
			var n int
			var err error
			for i := 0; i < tc.steps && err == nil; i++ {
				name := fmt.Sprintf("%02d%s", i, strings.Repeat("n", tc.nameLen-2))
				_, err = r.Step(t.Context(), Spec{Name: name}, effect(&n, strings.Repeat("r", tc.result)))
			}
			if n != tc.wantRuns {
				t.Errorf("%d effects ran, want %d (the step that does not fit must not run)", n, tc.wantRuns)
			}
			if tc.wantRuns == tc.steps {
				if err != nil {
					t.Fatalf("steps within %d bytes refused: %v", MaxTotalBytes, err)
				}
				return
			}
			var p PermanentError
			if !errors.As(err, &p) {
				t.Fatalf("err %v, want a permanent error", err)
			}
			for _, want := range []string{"00nnn", "shorter step names", "return ids", "fewer steps"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
	// A retry counts what earlier attempts recorded.
	rec := map[string]State{}
	for i := range 8 {
		rec[fmt.Sprintf("%02d%s", i, strings.Repeat("n", 62))] = State{Status: Done}
	}
	var n int
	if _, err := newRun(&memStore{}, 2, rec).Step(t.Context(), Spec{Name: "x"}, effect(&n, "")); err == nil || n != 0 {
		t.Fatalf("a ninth step after eight recorded 64-byte names: err %v, ran %d", err, n)
	}
}

func TestSeventeenthStepSaysWhatToDo(t *testing.T) {
	t.Parallel()
	r := newRun(&memStore{}, 1, nil)
	var n int
	var err error
	for i := 0; i <= MaxSteps && err == nil; i++ {
		_, err = r.Step(t.Context(), Spec{Name: fmt.Sprintf("s%d", i)}, effect(&n, ""))
	}
	if n != MaxSteps || err == nil || !strings.Contains(err.Error(), "one step per batch") {
		t.Fatalf("ran %d, err %v: want %d steps, then an error saying to batch", n, err, MaxSteps)
	}
}

// TestResultNotUTF8IsRefused: DynamoDB would store U+FFFD in place of the
// bad bytes while the in-memory tester kept them; the engine refuses such
// a result, the same for both.
func TestResultNotUTF8IsRefused(t *testing.T) {
	t.Parallel()
	r := newRun(&memStore{}, 1, nil)
	var n int
	_, err := r.Step(t.Context(), Spec{Name: "a"}, effect(&n, "caf\xc3"))
	var p PermanentError
	if !errors.As(err, &p) || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("err %v, want a permanent error about UTF-8", err)
	}
	if pend := r.Pending(); len(pend) != 0 {
		t.Fatalf("pending %v: the bad result must not be recorded", pend)
	}
}

// TestPermanentCheckErrorIsRetried: a check that fails, even with a
// permanent error, does not know whether the effect happened: it is a
// CheckError (retried, indeterminate once attempts are spent), never a
// permanent failure of the event.
func TestPermanentCheckErrorIsRetried(t *testing.T) {
	t.Parallel()
	r := newRun(&memStore{}, 2, map[string]State{"b": {Status: Started}})
	var n int
	refused := func(context.Context, string) (string, error) {
		return "", fmt.Errorf("search: %w", PermanentError{errors.New("GET /v1/notifications refused with 401")})
	}
	_, err := r.Step(t.Context(), Spec{Name: "b", Mode: AtMostOnce, Check: refused}, effect(&n, "rb"))
	var ce *CheckError
	if !errors.As(err, &ce) || n != 0 || r.Indeterminate() != nil {
		t.Fatalf("err %v, ran %d, indeterminate %v", err, n, r.Indeterminate())
	}
	if IsPermanent(err) || IsPermanent(fmt.Errorf("notify: %w", err)) {
		t.Fatalf("a failed check made the event permanent: %v", err)
	}
	if !IsPermanent(errors.Join(err, PermanentError{errors.New("declined")})) {
		t.Fatal("a permanent error beside a check error was lost")
	}
}

func TestStepAgainAfterFailureSaysToReturnTheError(t *testing.T) {
	t.Parallel()
	r := newRun(&memStore{}, 1, nil)
	fail := func(context.Context, string) (string, error) { return "", errors.New("503") }
	if _, err := r.Step(t.Context(), Spec{Name: "charge"}, fail); err == nil {
		t.Fatal("no error")
	}
	var n int
	_, err := r.Step(t.Context(), Spec{Name: "charge"}, effect(&n, "ch_1"))
	if err == nil || n != 0 || !strings.Contains(err.Error(), "return its error") || !strings.Contains(err.Error(), "retries") {
		t.Fatalf("err %v: want it to say to return the error and let the pipeline retry", err)
	}
}

func TestLoseLeaseStopsLaterSteps(t *testing.T) {
	t.Parallel()
	r := newRun(&memStore{}, 1, nil)
	r.LoseLease(errLost)
	var n int
	if _, err := r.Step(t.Context(), Spec{Name: "a"}, effect(&n, "ra")); !errors.Is(err, errLost) || n != 0 {
		t.Fatalf("err %v, ran %d: no step may run once the lease is lost", err, n)
	}
	if !r.LeaseLost() {
		t.Fatal("LeaseLost false")
	}
}
