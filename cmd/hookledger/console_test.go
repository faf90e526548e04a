package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/config"
)

// TestConsoleHelpSaysDefaultsAndNeeds: --help names where the console
// listens by default and every setting it reads, with what each is for.
func TestConsoleHelpSaysDefaultsAndNeeds(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := run(t.Context(), []string{"console", "--help"}, &out, io.Discard); code != 0 {
		t.Fatalf("console --help: exit %d", code)
	}
	help := out.String()
	for _, want := range []string{
		"http://" + defaultConsoleAddr, "--allow-remote", "nothing is deployed", "AWS credentials", "AWS_ENDPOINT_URL",
		"HOOKLEDGER_TABLE", "default " + config.DefaultTable, "HOOKLEDGER_QUEUE_URL", "only reads",
		"HOOKLEDGER_DLQ_URL", "HOOKLEDGER_PAYLOAD_BUCKET",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("console --help lacks %q:\n%s", want, help)
		}
	}
}
