package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the supervisor's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSupervisorGivesUpOnFailingPipeline: demo --target dev restarted a
// pipeline that failed at start 482 times in 60 s without saying why. It now
// stops after three failures, with the end of the child's log and its path.
func TestSupervisorGivesUpOnFailingPipeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "hookledger")
	script := "#!/bin/sh\nfor i in $(seq 1 30); do echo \"noise $i\"; done\necho 'dev: NEW_EFFECT_URL is not set' >&2\nexit 2\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	d := &demo{stdout: &out, stderr: &errb, logDir: dir, pipeline: bin, addr: "127.0.0.1:1"}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ctx, d.giveUp = context.WithCancelCause(ctx)
	defer d.giveUp(nil)
	sup, err := d.supervise(ctx, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	sup.stop()
	if cause := context.Cause(ctx); !errors.Is(cause, errPipelineDown) {
		t.Fatalf("demo stopped by %v, want errPipelineDown", cause)
	}
	if n := strings.Count(out.String(), "restarting it"); n != maxFailures-1 {
		t.Errorf("%d restarts, want %d:\n%s", n, maxFailures-1, out.String())
	}
	s := errb.String()
	for _, want := range []string{
		"exited unexpectedly 3 times", "exit status 2",
		filepath.Join(dir, "pipeline.log"), "dev: NEW_EFFECT_URL is not set",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("stderr lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "noise 1\n") || !strings.Contains(s, "noise 30") {
		t.Errorf("want only the last %d lines of the log:\n%s", logTailLines, s)
	}
}

func TestTailLines(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte("a\nb\nc\n"), 0o644)
	if got := tailLines(p, 2); got != "  b\n  c\n" {
		t.Errorf("tailLines = %q", got)
	}
	if got := tailLines(p, 20); got != "  a\n  b\n  c\n" {
		t.Errorf("tailLines = %q", got)
	}
	if got := tailLines(p+"-none", 2); !strings.Contains(got, "cannot read it") {
		t.Errorf("tailLines of a missing file = %q", got)
	}
}
