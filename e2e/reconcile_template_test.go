package e2e

// Static checks of the reconciler's part of template.yaml (no build tag: they
// run with the unit tests).

import (
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"
)

// The reconciler's environment must stay within Lambda's 4 KB with every
// parameter at its longest. It does not carry the sources (it reads them
// from the receiver's configuration), so ReconcileConfig's MaxLength is what
// bounds it.
func TestReconcilerEnvironmentFitsLambdas4KB(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	fn := tp.resource("ReconcilerFunction")
	if fn == nil {
		t.Fatal("no ReconcilerFunction in template.yaml")
	}
	ml := get(tp.root, "Parameters", "ReconcileConfig", "MaxLength")
	if ml == nil {
		t.Fatal("ReconcileConfig has no MaxLength: its JSON can push the environment past 4 KB")
	}
	maxLen, err := strconv.Atoi(ml.Value)
	if err != nil {
		t.Fatal(err)
	}
	longest := map[string]int{
		"HOOKLEDGER_TABLE": 255, "HOOKLEDGER_RETENTION": 8, "HOOKLEDGER_SHARDS": 4, "HOOKLEDGER_RECLAIM_AFTER": 8,
		"LOG_LEVEL": 5, "HOOKLEDGER_STAGE": 16, "AWS_ENDPOINT_URL": 64,
		"HOOKLEDGER_RECONCILE": maxLen, "HOOKLEDGER_RECEIVER_FUNCTION": 64, // a function name has at most 64 characters
		"HOOKLEDGER_RECONCILE_GRANTS":   len("ssm=;secretsmanager=") + 128 + 200,
		"HOOKLEDGER_RECONCILE_SCHEDULE": 64, // ReconcileSchedule's MaxLength
	}
	total := 0
	for _, vars := range []*yaml.Node{get(tp.root, "Globals", "Function", "Environment", "Variables"),
		get(fn, "Properties", "Environment", "Variables")} {
		for i := 0; i+1 < len(vars.Content); i += 2 {
			name := vars.Content[i].Value
			n, ok := longest[name]
			if !ok {
				t.Errorf("reconciler variable %s has no longest value in this test; add one", name)
			}
			total += len(name) + n
		}
	}
	if total > 4096 {
		t.Errorf("reconciler environment can reach %d bytes, over Lambda's 4096: lower ReconcileConfig's MaxLength", total)
	}
	t.Logf("reconciler environment at most %d bytes", total)
}

// The reconciler is off unless asked for, and an alarm watches what it finds.
func TestReconcilerIsOptionalAndAlarmed(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	if d := get(tp.root, "Parameters", "ReconcileEnabled", "Default"); d == nil || d.Value != "false" {
		t.Errorf("ReconcileEnabled default %v, want false", d)
	}
	for _, name := range []string{"ReconcilerRole", "ReconcilerLogGroup", "ReconcilerFunction", "ReconcileMissingAlarm", "ReconcilerErrorsAlarm"} {
		if c := get(tp.resource(name), "Condition"); c == nil || c.Value != "ReconcileOn" {
			t.Errorf("%s is not conditional on ReconcileOn", name)
		}
	}
	a := tp.resource("ReconcileMissingAlarm")
	if get(a, "Properties", "MetricName").Value != "ReconcileMissing" || get(a, "Properties", "Threshold").Value != "0" ||
		get(a, "Properties", "ComparisonOperator").Value != "GreaterThanThreshold" {
		t.Error("ReconcileMissingAlarm must fire when ReconcileMissing > 0")
	}
}
