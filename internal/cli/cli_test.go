package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseHelpPrintsUsageOnceToStdout(t *testing.T) {
	for _, help := range []string{"--help", "-h", "-help"} {
		var out, errb bytes.Buffer
		fs := NewFlags("prog", "sub", "sub [--n 1]", &errb)
		fs.Int("n", 1, "a number")
		if code := Parse(fs, []string{help}, &out); code != 0 {
			t.Errorf("%s: exit %d, want 0", help, code)
		}
		if n := strings.Count(out.String(), "usage: prog sub"); n != 1 {
			t.Errorf("%s: usage printed %d times to stdout:\n%s", help, n, out.String())
		}
		if errb.Len() != 0 {
			t.Errorf("%s: stderr %q, want nothing", help, errb.String())
		}
	}
}

func TestParseUsageErrorGoesToStderr(t *testing.T) {
	var out, errb bytes.Buffer
	fs := NewFlags("prog", "sub", "sub [--n 1]", &errb)
	fs.Int("n", 1, "a number")
	if code := Parse(fs, []string{"--bogus"}, &out); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q, want nothing", out.String())
	}
	if s := errb.String(); !strings.Contains(s, "bogus") || strings.Count(s, "usage: prog sub") != 1 {
		t.Errorf("stderr %q, want the error and the usage once", s)
	}
}

func TestParseGoesOn(t *testing.T) {
	var out, errb bytes.Buffer
	fs := NewFlags("prog", "sub", "sub [--n 1]", &errb)
	n := fs.Int("n", 1, "a number")
	if code := Parse(fs, []string{"--n", "3"}, &out); code != -1 || *n != 3 || out.Len()+errb.Len() != 0 {
		t.Errorf("exit %d, n %d, stdout %q, stderr %q", code, *n, out.String(), errb.String())
	}
}
