package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for name := range commands() {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{name, "--help"}, &out, &errb)
		// Once, to stdout; nothing on stderr.
		if code != 0 || strings.Count(out.String(), "usage: hooklab "+name) != 1 || errb.Len() != 0 {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", name, code, out.String(), errb.String())
		}
	}
	var out bytes.Buffer
	if code := run(t.Context(), []string{"--help"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "chaos") {
		t.Errorf("top-level help: %d %q", code, out.String())
	}
	if code := run(t.Context(), []string{"bogus"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("unknown command exit %d, want 2", code)
	}
}

func TestOperatorBinaryMissing(t *testing.T) {
	t.Parallel()
	if _, err := operatorBinary(t.TempDir() + "/nothing"); err == nil || !strings.Contains(err.Error(), "--hookledger") {
		t.Fatalf("want an error that says how to fix it, got %v", err)
	}
}
