package hookledger_test

// Static checks of the roles' IAM actions in template.yaml (no build tag:
// they run with the unit tests).

import (
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/cfn"
	"gopkg.in/yaml.v3"
)

// SQS authorises its batch calls by the single call's action
// (SendMessageBatch as sqs:SendMessage, DeleteMessageBatch as
// sqs:DeleteMessage, ChangeMessageVisibilityBatch as
// sqs:ChangeMessageVisibility): an "sqs:...Batch" action grants nothing on
// AWS and only misleads a reviewer. MiniStack, enforcing IAM, checks the
// batch call by its own name, so the reclaimer's role grants
// sqs:SendMessageBatch in a policy that exists only on an emulator deploy
// (EndpointUrl set); nowhere else may such an action appear.
func TestNoBatchActionsOnAWS(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	emulatorGrant := false
	var walk func(n *yaml.Node, where string, emulatorOnly bool)
	walk = func(n *yaml.Node, where string, emulatorOnly bool) {
		if n == nil {
			return
		}
		if n.Tag == "!If" && len(n.Content) == 3 && n.Content[0].Value == "HasEndpointUrl" {
			walk(n.Content[1], where, true)
			walk(n.Content[2], where, emulatorOnly)
			return
		}
		if n.Kind == yaml.ScalarNode && strings.HasPrefix(n.Value, "sqs:") && strings.HasSuffix(n.Value, "Batch") {
			if !emulatorOnly {
				t.Errorf("%s grants %s, which is not an IAM action on AWS (the single call's action covers the batch); grant it only on emulator deploys (!If HasEndpointUrl) or remove it", where, n.Value)
			}
			if where == "ReclaimerRole" && n.Value == "sqs:SendMessageBatch" && emulatorOnly {
				emulatorGrant = true
			}
		}
		for _, c := range n.Content {
			walk(c, where, emulatorOnly)
		}
	}
	res := cfn.Get(tp.root, "Resources")
	for i := 0; i+1 < len(res.Content); i += 2 {
		walk(res.Content[i+1], res.Content[i].Value, false)
	}
	// The e2e deploys into MiniStack with IAM enforced: without the
	// emulator-only grant the reclaimer's re-drives would be denied there.
	if !emulatorGrant {
		t.Error("ReclaimerRole has no emulator-only sqs:SendMessageBatch grant (!If HasEndpointUrl); the enforced-IAM e2e would deny its batch re-drives")
	}
	for _, p := range cfn.Get(tp.resource("ReclaimerRole"), "Properties", "Policies").Content {
		if p.Tag != "!If" || p.Content[0].Value != "HasEndpointUrl" {
			continue
		}
		for _, st := range cfn.Get(p.Content[1], "PolicyDocument", "Statement").Content {
			if a := cfn.Get(st, "Action"); a == nil || a.Value != "sqs:SendMessageBatch" {
				t.Errorf("the reclaimer's emulator-only policy grants %v; it exists for sqs:SendMessageBatch alone", a)
			}
			if r := cfn.Get(st, "Resource"); r == nil || r.Tag != "!GetAtt" || r.Value != "Queue.Arn" {
				t.Errorf("the reclaimer's emulator-only policy: resource %v, want !GetAtt Queue.Arn", r)
			}
		}
	}
}
