package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/testbody"
)

func TestBenchHelpAndRefusals(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"bench", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "--only") && !strings.Contains(out.String(), "-only") {
		t.Fatalf("bench --help: code %d, %q", code, out.String())
	}
	if code := run(t.Context(), []string{"bench", "--endpoint", "https://dynamodb.us-east-1.amazonaws.com"}, &out, &errb); code != 2 {
		t.Fatalf("a non-loopback endpoint must be refused with 2, got %d", code)
	}
	if code := run(t.Context(), []string{"bench", "--endpoint", "http://localhost:1", "--only", "nonsense"}, &out, &errb); code != 2 {
		t.Fatalf("an unknown section must be refused with 2, got %d", code)
	}
}

func TestCompareStreamHasTheDuplicateShareAndRepeatsEarlierEvents(t *testing.T) {
	t.Parallel()
	s := compareStream(20, 0.3, "x")
	if len(s) != 20*len(testbody.Sizes) {
		t.Fatalf("%d deliveries", len(s))
	}
	seen, dups := map[string]bool{}, 0
	for _, d := range s {
		if d.Dup {
			dups++
			if !seen[d.ID] {
				t.Fatalf("duplicate %s before its original", d.ID)
			}
		}
		seen[d.ID] = true
	}
	if dups != 6*len(testbody.Sizes) {
		t.Fatalf("%d duplicates, want 30%%", dups)
	}
}

func TestAVJSONDecodesBoto3Items(t *testing.T) {
	t.Parallel()
	var m map[string]json.RawMessage
	json.Unmarshal([]byte(`{"id":{"S":"abc"},"expiration":{"N":"1780000000"},"data":{"B":"AAEC"},"m":{"M":{"k":{"BOOL":true}}}}`), &m)
	item := avMap(m)
	if s, ok := item["id"].(*types.AttributeValueMemberS); !ok || s.Value != "abc" {
		t.Fatalf("id %#v", item["id"])
	}
	if b, ok := item["data"].(*types.AttributeValueMemberB); !ok || len(b.Value) != 3 {
		t.Fatalf("data %#v", item["data"])
	}
	if _, ok := item["m"].(*types.AttributeValueMemberM); !ok {
		t.Fatalf("m %#v", item["m"])
	}
}

// The targets price a trace id on every log line a delivery writes, so the
// bill counts the lines, apart from the metric lines (which carry none).
// Regression: it assumed two lines a new event, after the receiver's
// accepted line had gone to debug.
func TestSplitLogsCountsTheLogLines(t *testing.T) {
	t.Parallel()
	var s splitLogs
	s.Write([]byte(`{"level":"INFO","msg":"event"}` + "\n" + `{"Dead":1,"_aws":{}}` + "\n"))
	s.Write([]byte(`{"level":"INFO","msg":"webhook"}` + "\n"))
	if logs, metrics := s.take(); s.taken != 2 || logs == 0 || metrics == 0 {
		t.Fatalf("took %v log bytes, %v metric bytes, %v lines; want 2 log lines and both kinds of bytes", logs, metrics, s.taken)
	}
	if s.take(); s.taken != 0 {
		t.Errorf("a second take counted %v lines, want 0", s.taken)
	}
}
