package hookledger_test

// A static check of what NeedsOperatorAlarm tells about an unreadable
// signing secret in template.yaml (no build tag: it runs with the unit
// tests).

import (
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/cfn"
)

// The alarm tells the operator how to find what to fix: its Logs Insights
// query covers the receiver's log group and the fields the receiver logs
// for each unreadable secret (source.Resolved.LogFailures), whose
// secret_problem and secret_fix say what is wrong and what to do.
func TestUnreadableSecretsSayHowToFindThem(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	d := cfn.Get(tp.resource("NeedsOperatorAlarm"), "Properties", "AlarmDescription")
	if d == nil || d.Tag != "!Sub" {
		t.Fatalf("NeedsOperatorAlarm's description must be a !Sub naming the receiver's log group: %v", d)
	}
	for _, want := range []string{"SecretUnavailable", "${ReceiverLogGroup}", "Logs Insights", "source, tenant",
		"secret_ref, secret_problem, secret_fix", "filter level in ['ERROR', 'WARN']"} {
		if !strings.Contains(d.Value, want) {
			t.Errorf("NeedsOperatorAlarm's description lacks %q:\n%s", want, d.Value)
		}
	}
	if len(d.Value) > 1024-64 { // CloudWatch's limit, with room for the log group's name
		t.Errorf("NeedsOperatorAlarm's description is %d characters; CloudWatch takes 1024 with the log group's name", len(d.Value))
	}
	if tp.resource("SecretUnavailableAlarm") != nil {
		t.Error("SecretUnavailableAlarm is back: NeedsOperatorAlarm and the 5xx alarm page on the same 503s")
	}
}
