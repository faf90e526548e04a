package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/queue"
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

// The bill prices the handlers' log lines and their metric (EMF) lines
// apart, and each take starts from zero.
func TestSplitLogsSeparatesMetricLines(t *testing.T) {
	t.Parallel()
	var s splitLogs
	logLine, metricLine, other := `{"level":"INFO","msg":"event"}`+"\n", `{"Dead":1,"_aws":{}}`+"\n", `{"level":"INFO","msg":"webhook"}`+"\n"
	s.Write([]byte(logLine + metricLine))
	s.Write([]byte(other))
	if logs, metrics := s.take(); logs != float64(len(logLine)+len(other)) || metrics != float64(len(metricLine)) {
		t.Fatalf("took %v log bytes, %v metric bytes; want %d and %d", logs, metrics, len(logLine)+len(other), len(metricLine))
	}
	if logs, metrics := s.take(); logs != 0 || metrics != 0 {
		t.Errorf("a second take counted %v and %v bytes, want none", logs, metrics)
	}
}

// The processor's lines carry the trace id its message's AWSTraceHeader
// names, so the bench hands it the header as the event source mapping
// does; without it the bill priced lines shorter than Lambda writes.
func TestESMMessageCarriesTheTraceHeader(t *testing.T) {
	t.Parallel()
	h := "Root=1-6b1161f1-9fbe27bf175039d5222eae39;Parent=53995c3f42cd8ad8;Sampled=0"
	m := esmMessage(sqstypes.Message{MessageId: aws.String("m1"), Body: aws.String("{}"), Attributes: map[string]string{queue.TraceAttribute: h}})
	if m.Attributes[queue.TraceAttribute] != h || m.MessageId != "m1" || m.Body != "{}" {
		t.Errorf("esmMessage = %+v, want the message with its trace header", m)
	}
	if len(esmAttributes) != 1 || string(esmAttributes[0]) != queue.TraceAttribute {
		t.Errorf("the bench asks SQS for %v, want the trace header", esmAttributes)
	}
}
