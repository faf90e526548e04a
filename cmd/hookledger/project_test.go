package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/version"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "hookledger "+version.Version+" (go1.") {
		t.Errorf("exit %d, stdout %q, stderr %q; want hookledger %s (go...)", code, out.String(), errb.String(), version.Version)
	}
	checkUsage(t, []usageCase{{[]string{"version", "extra"}, `version: unexpected argument "extra"`}})
}

// TestProjectCommandsRefuseBadArguments: nothing is run, fetched or
// written for a command line that cannot work.
func TestProjectCommandsRefuseBadArguments(t *testing.T) {
	t.Setenv("HOOKLEDGER_LOCAL_PORT", "")
	checkUsage(t, []usageCase{
		{[]string{"template", "x"}, `template: unexpected argument "x"`},
		{[]string{"upgrade", "banana"}, `upgrade: "banana" is not a version; give one such as v0.2.0`},
		{[]string{"upgrade", "v0.2"}, `"v0.2" is not a version`},
		{[]string{"upgrade", "v0.2.0", "v0.3.0"}, "give at most one VERSION"},
		{[]string{"local", "--send", "--down"}, "give --send or --down, not both"},
		{[]string{"local", "--port", "0"}, "--port 0: want 1 to 65535"},
		{[]string{"local", "--wait", "0s"}, "--wait 0s: want a positive duration"},
		{[]string{"local", "up"}, `unexpected argument "up"; local takes only flags`},
	})
	t.Setenv("HOOKLEDGER_LOCAL_PORT", "http")
	checkUsage(t, []usageCase{{[]string{"local"}, `HOOKLEDGER_LOCAL_PORT="http": want a port number`}})
}

// TestProjectCommandsInTheEngine: template and upgrade are for a project
// made with sam init; in hookledger's own repository they say so and
// change nothing.
func TestProjectCommandsInTheEngine(t *testing.T) {
	t.Setenv("GOWORK", "off")
	for args, want := range map[string]string{
		"template": "template: this is hookledger's own repository: its template.yaml is the source",
		"upgrade":  "upgrade: this is hookledger's own repository; upgrade is for a project made with sam init",
	} {
		var out, errb bytes.Buffer
		if code := run(t.Context(), strings.Fields(args), &out, &errb); code != 1 || !strings.Contains(errb.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", args, code, errb.String(), want)
		}
	}
}
