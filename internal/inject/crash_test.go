//go:build crashpoints

package inject

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCrashOnceAcrossProcesses runs this test binary as a child that hits a
// crash point: the first child exits with CrashExitCode and leaves the mark, the
// second finds the mark and carries on.
const point = "processor.after_effect"

func TestCrashOnceAcrossProcesses(t *testing.T) {
	if os.Getenv("CRASHPOINT_CHILD") == "1" {
		Crash(point)
		os.Exit(0)
	}
	mark := filepath.Join(t.TempDir(), "crashed")
	run := func() int {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashOnceAcrossProcesses$")
		cmd.Env = append(os.Environ(), "CRASHPOINT_CHILD=1", "HOOKLEDGER_CRASH="+point, "HOOKLEDGER_CRASH_MARK="+mark)
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	if code := run(); code != CrashExitCode {
		t.Fatalf("first child exited %d, want %d", code, CrashExitCode)
	}
	if b, err := os.ReadFile(CrashMarkFile(mark, point)); err != nil || string(b) != point+"\n" {
		t.Fatalf("mark %q %v", b, err)
	}
	if code := run(); code != 0 {
		t.Fatalf("second child exited %d, want 0 (the mark stops a second crash)", code)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	got, err := ParseCrash("step.charge.ran:3, step.notify.ran ,")
	if err != nil || len(got) != 2 || got["step.charge.ran"] != 3 || got["step.notify.ran"] != 1 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"a:0", "a:x", "a:-1"} {
		if _, err := ParseCrash(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
