package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/idempotency"
)

// Crash tests run this test binary as a child process that claims a key
// in the emulator's table and dies (os.Exit, as a killed or timed-out
// Lambda does: no deferred code, no failure recorded). The parent then
// retries as the next invocation would. The child's clock is the parent's
// fake clock, passed in, so the parent moves past the child's deadline
// instead of sleeping.

const crashChildEnv = "IDEMPOTENCY_CRASH_CHILD"

// crashExit is the status a crashing child exits with: its own, and that
// of the package's crash points (crash_on.go).
const crashExit = 86

// crashChild is the child's side; it returns only when not a child.
func crashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) != "1" {
		return
	}
	now, _ := strconv.ParseInt(os.Getenv("IDEMPOTENCY_CRASH_NOW"), 10, 64)
	clock := newClock(time.UnixMilli(now))
	db := dynamodb.NewFromConfig(emulatorConfig(t))
	s, err := idempotency.NewStore(db, idempotency.Options{Table: os.Getenv("IDEMPOTENCY_CRASH_TABLE"), Now: clock.Now, Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // the invocation's remaining time
	defer cancel()
	_, _, err = idempotency.Do(ctx, s, "charge", "order-1", func(ctx context.Context) (string, error) {
		call, _ := idempotency.CallFrom(ctx)
		effect(os.Getenv("IDEMPOTENCY_CRASH_EFFECTS"), call)
		if os.Getenv("IDEMPOTENCY_CRASH_IN_CALL") == "1" {
			os.Exit(crashExit) // dies between its effect and the store
		}
		return "charged", nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// effect appends one line per run of the charge, with its downstream key
// and attempt: what a payments API would see.
func effect(path string, call idempotency.Call) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(f, "%s %d\n", call.Key, call.Attempt)
	f.Close()
}

type crashRun struct {
	table, effects string
	clock          *testClock
	store          *idempotency.Store
}

func newCrashRun(t *testing.T) *crashRun {
	cfg := emulatorConfig(t)
	db := dynamodb.NewFromConfig(cfg)
	r := &crashRun{table: uniqueName("idem-crash"), effects: filepath.Join(t.TempDir(), "effects"), clock: newClock(time.Now().UTC().Truncate(time.Millisecond))}
	if err := idempotency.CreateTable(t.Context(), db, r.table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &r.table}) })
	var err error
	r.store, err = idempotency.NewStore(db, idempotency.Options{Table: r.table, Now: r.clock.Now, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// child runs the child with extra environment and returns its exit code.
func (r *crashRun) child(t *testing.T, test string, env ...string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), append(env, crashChildEnv+"=1", "IDEMPOTENCY_CRASH_TABLE="+r.table,
		"IDEMPOTENCY_CRASH_EFFECTS="+r.effects, fmt.Sprintf("IDEMPOTENCY_CRASH_NOW=%d", r.clock.Now().UnixMilli()))...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() == 2 {
			t.Fatalf("child failed: %s", out)
		}
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("child: %v %s", err, out)
	}
	return 0
}

// retry is the next invocation: refused while the dead one's claim runs,
// then attempt 2 once its deadline and the lease margin have passed.
func (r *crashRun) retry(t *testing.T) (string, idempotency.Info) {
	t.Helper()
	charge := func(ctx context.Context) (string, error) {
		call, _ := idempotency.CallFrom(ctx)
		effect(r.effects, call)
		return "charged", nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, _, err := idempotency.Do(ctx, r.store, "charge", "order-1", charge); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("retry inside the dead invocation's deadline: %v, want ErrInProgress", err)
	}
	r.clock.Advance(2*time.Second + idempotency.DefaultLeaseMargin)
	got, info, err := idempotency.Do(ctx, r.store, "charge", "order-1", charge)
	if err != nil || got != "charged" || info.Outcome != idempotency.Executed || info.Attempt != 2 || !info.Stored {
		t.Fatalf("retry after the deadline: %q %+v %v", got, info, err)
	}
	if _, info, err := idempotency.Do(ctx, r.store, "charge", "order-1", charge); err != nil || !info.Replayed() {
		t.Fatalf("a third call: %+v %v", info, err)
	}
	return got, info
}

// effects returns the runs the "payments API" saw.
func (r *crashRun) runs(t *testing.T) []string {
	b, err := os.ReadFile(r.effects)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
}

// TestCrashBetweenEffectAndStore: the process dies after the charge and
// before its result is stored. The next invocation is refused until the
// dead one's deadline, then runs the charge again as attempt 2 with the
// same downstream key, which a payments API that honours idempotency keys
// (Stripe's Idempotency-Key) turns into one charge.
func TestCrashBetweenEffectAndStore(t *testing.T) {
	crashChild(t)
	t.Parallel()
	r := newCrashRun(t)
	if code := r.child(t, "TestCrashBetweenEffectAndStore", "IDEMPOTENCY_CRASH_IN_CALL=1"); code != crashExit {
		t.Fatalf("child exited %d, want the crash (%d)", code, crashExit)
	}
	rec := record(t, &env{backend: r.store.Backend()}, "charge", "order-1")
	if rec.Status != idempotency.StatusInProgress || rec.LeaseUntil.After(r.clock.Now().Add(2*time.Second+idempotency.DefaultLeaseMargin)) {
		t.Fatalf("after the crash: %+v (want in progress until the child's deadline and the lease margin)", rec)
	}
	r.retry(t)
	runs := r.runs(t)
	k, _ := idempotency.KeyOf("charge", "order-1")
	if want := []string{k, "1", "|", k, "2", "|"}; strings.Join(runs, " ") != strings.Join(want, " ") {
		t.Fatalf("payments API saw %v, want attempts 1 and 2 with one key", runs)
	}
}
