package hookledger_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/cfn"
	"github.com/hookledger/hookledger/internal/trace"
	"gopkg.in/yaml.v3"
)

// Tracing is one parameter, off by default. XRay turns on Lambda's active
// tracing for every function and sends the spans to X-Ray (on AWS only: an
// emulator has no OTLP endpoint), and grants each role exactly what that
// needs, inline, so that Lambda finds the grant when it turns tracing on:
// xray:PutTraceSegments (the daemon's segments and the OTLP spans) and
// xray:PutTelemetryRecords (the daemon's), on *, which is all X-Ray allows.
// No managed policy: it would grant the sampling reads as well.
func TestTracingGrantsExactlyWhatXRayNeeds(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	p := cfn.Get(tp.root, "Parameters", "Tracing")
	if p == nil || cfn.Value(cfn.Get(p, "Default")) != "Off" || len(cfn.Get(p, "AllowedValues").Content) != 2 {
		t.Fatalf("parameter Tracing %v: want Off (default) or XRay", p)
	}
	if tr := cfn.Get(tp.root, "Globals", "Function", "Tracing"); tr == nil || tr.Tag != "!If" || tr.Content[0].Value != "TracingOn" ||
		tr.Content[1].Value != "Active" || tr.Content[2].Value != "PassThrough" {
		t.Errorf("Globals' Tracing %v: want !If [TracingOn, Active, PassThrough]", tr)
	}
	// The functions that record spans; the bus door and the reconciler record none.
	for _, fn := range []string{"ReceiverFunction", "ProcessorFunction", "ReclaimerFunction"} {
		spans := cfn.Get(tp.resource(fn), "Properties", "Environment", "Variables", "HOOKLEDGER_SPANS")
		if spans == nil || spans.Tag != "!If" || spans.Content[0].Value != "SpansToXRay" || spans.Content[1].Value != trace.XRay {
			t.Errorf("%s's HOOKLEDGER_SPANS %v: want !If [SpansToXRay, %s, ...]", fn, spans, trace.XRay)
		}
	}
	cond := cfn.Get(tp.root, "Conditions", "SpansToXRay")
	if cond == nil || !strings.Contains(nodeText(cond), "TracingOn") || !strings.Contains(nodeText(cond), "HasEndpointUrl") {
		t.Errorf("SpansToXRay %s: want TracingOn and not an emulator deploy", nodeText(cond))
	}
	for _, role := range []string{"ReceiverRole", "ProcessorRole", "ReclaimerRole", "ReconcilerRole", "BusRole"} {
		props := cfn.Get(tp.resource(role), "Properties")
		if cfn.Get(props, "ManagedPolicyArns") != nil {
			t.Errorf("%s has managed policies", role)
		}
		tracing := 0
		for _, pol := range cfn.Get(props, "Policies").Content {
			conditional := pol.Tag == "!If" && pol.Content[0].Value == "TracingOn"
			if !conditional {
				if strings.Contains(nodeText(pol), "xray:") {
					t.Errorf("%s grants X-Ray outside its TracingOn policy", role)
				}
				continue
			}
			tracing++
			sts := cfn.Get(pol.Content[1], "PolicyDocument", "Statement").Content
			if len(sts) != 1 {
				t.Errorf("%s's tracing policy has %d statements, want 1", role, len(sts))
				continue
			}
			var actions []string
			for _, a := range cfn.Get(sts[0], "Action").Content {
				actions = append(actions, a.Value)
			}
			slices.Sort(actions)
			if !slices.Equal(actions, []string{"xray:PutTelemetryRecords", "xray:PutTraceSegments"}) || cfn.Value(cfn.Get(sts[0], "Resource")) != "*" ||
				cfn.Value(cfn.Get(sts[0], "Effect")) != "Allow" {
				t.Errorf("%s's tracing statement: %s", role, nodeText(sts[0]))
			}
		}
		if tracing != 1 {
			t.Errorf("%s has %d TracingOn policies, want 1", role, tracing)
		}
	}
}

// nodeText flattens a node's scalars, for a search or a message.
func nodeText(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	parts := []string{n.Value}
	for _, c := range n.Content {
		parts = append(parts, nodeText(c))
	}
	return strings.Join(parts, " ")
}
