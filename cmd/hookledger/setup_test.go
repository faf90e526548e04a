package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/queue"
)

// TestSetupValidatesEveryFlagFirst: every flag is checked before the
// endpoint is even looked at, so a bad one creates nothing (the table was
// created before a --visibility SQS refuses); values the old code silently
// replaced (--visibility -1 became 30, --max-receives 0 became 5) are
// refused.
func TestSetupValidatesEveryFlagFirst(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9") // nothing listens; nothing must be called
	checkUsage(t, []usageCase{
		{[]string{"setup", "--visibility", "-1"}, "--visibility -1: want 1 to 43200 seconds"},
		{[]string{"setup", "--visibility", "0"}, "--visibility 0"},
		{[]string{"setup", "--visibility", "999999"}, "6x the processor timeout"},
		{[]string{"setup", "--max-receives", "0"}, "--max-receives 0: want 1 to 1000"},
		{[]string{"setup", "--max-receives", "1001"}, "--max-receives 1001"},
		{[]string{"setup", "--table", ""}, `--table "": want a DynamoDB table name`},
		{[]string{"setup", "--table", "a b"}, `--table "a b"`},
		{[]string{"setup", "--queue", ""}, `--queue "": want an SQS queue name`},
		{[]string{"setup", "--queue", strings.Repeat("q", 77)}, "--queue"},
		{[]string{"setup", "extra"}, "unexpected argument"},
	})
	var errb bytes.Buffer
	run(t.Context(), []string{"setup", "--visibility", "-1"}, io.Discard, &errb)
	if !strings.Contains(errb.String(), "nothing was created") {
		t.Errorf("stderr %q does not say nothing was created", errb.String())
	}
	if err := setupFlags("hookledger", queue.QueueSpec{Name: "hookledger", VisibilityTimeout: 180, MaxReceiveCount: 5}); err != nil {
		t.Errorf("the defaults are refused: %v", err)
	}
	if err := setupFlags("hookledger", queue.QueueSpec{Name: strings.Repeat("q", 76), VisibilityTimeout: 43200, MaxReceiveCount: 1000}); err != nil {
		t.Errorf("the limits are refused: %v", err)
	}
}
