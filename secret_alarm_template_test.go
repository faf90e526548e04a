package hookledger_test

// A static check of the SecretUnavailable alarm in template.yaml (no build
// tag: it runs with the unit tests).

import (
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/cfn"
	"github.com/hookledger/hookledger/internal/source"
)

// The alarm tells the operator how to find what to fix: a Logs Insights
// query on the receiver's log group over the fields the receiver logs for
// each unreadable secret (source.Resolved.LogFailures), and the problems
// those lines name.
func TestSecretUnavailableAlarmSaysHowToFindIt(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	d := cfn.Get(tp.resource("SecretUnavailableAlarm"), "Properties", "AlarmDescription")
	if d == nil || d.Tag != "!Sub" {
		t.Fatalf("SecretUnavailableAlarm's description must be a !Sub naming the receiver's log group: %v", d)
	}
	text := d.Value
	for _, want := range []string{"${ReceiverLogGroup}", "Logs Insights", "filter ispresent(secret_problem)",
		"source, tenant, secret_ref, secret_problem, secret_fix",
		source.ProblemDeleted, source.ProblemDenied, source.ProblemThrottled, source.ProblemNotPlaintext} {
		if !strings.Contains(text, want) {
			t.Errorf("SecretUnavailableAlarm's description lacks %q:\n%s", want, text)
		}
	}
	if len(text) > 1024-64 { // CloudWatch's limit, with room for the log group's name
		t.Errorf("SecretUnavailableAlarm's description is %d characters; CloudWatch takes 1024 with the log group's name", len(text))
	}
}
