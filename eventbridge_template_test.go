package hookledger_test

// The EventBridge parts of the template, pinned: the bus door and the
// forward bus are off by default, the bus door's role reads no secret, the
// rule retries and dead-letters, what the bus door parks is alarmed, and
// the processor may put events on the forward bus and no other.

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/cfn"
	"github.com/hookledger/hookledger/internal/source"
	"gopkg.in/yaml.v3"
)

// busResources are the bus door's resources, each behind HasInboundBus.
var busResources = []string{"BusDeadLetterQueue", "BusIntakeQueue", "BusQueuePolicy", "BusRule", "BusRole", "BusLogGroup",
	"BusFunction", "BusParkedAlarm", "BusDeadLetterQueueNotEmptyAlarm"}

func TestEventBridgeIsOffByDefault(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	for _, p := range []string{"InboundEventBus", "ForwardEventBus"} {
		if d := cfn.Get(tp.root, "Parameters", p, "Default"); d == nil || d.Value != "" {
			t.Errorf("%s's default is %v, want empty (nothing deployed)", p, d)
		}
	}
	for _, name := range busResources {
		r := tp.resource(name)
		if r == nil {
			t.Errorf("no resource %s", name)
			continue
		}
		if c := cfn.Get(r, "Condition"); c == nil || c.Value != "HasInboundBus" {
			t.Errorf("%s is deployed without InboundEventBus", name)
		}
	}
	for _, out := range []string{"BusFunctionName", "BusIntakeQueueUrl", "BusDeadLetterQueueUrl"} {
		if c := cfn.Get(tp.root, "Outputs", out, "Condition"); c == nil || c.Value != "HasInboundBus" {
			t.Errorf("output %s without HasInboundBus", out)
		}
	}
	fw := cfn.Get(tp.resource("ProcessorFunction"), "Properties", "Environment", "Variables", "HOOKLEDGER_FORWARD_BUS")
	if fw == nil || fw.Tag != "!If" || fw.Content[0].Value != "HasForwardBus" {
		t.Error("HOOKLEDGER_FORWARD_BUS must be set only with ForwardEventBus")
	}
}

// statementsOf returns every statement of a role's policies, conditional
// ones included, keyed by Sid (or "kms" for the unnamed key grant).
func statementsOf(t *testing.T, tp tmpl, role string) map[string]*yaml.Node {
	t.Helper()
	out := map[string]*yaml.Node{}
	for _, p := range cfn.Get(tp.resource(role), "Properties", "Policies").Content {
		doc := p
		if p.Tag == "!If" {
			doc = p.Content[1]
		}
		for _, st := range cfn.Get(doc, "PolicyDocument", "Statement").Content {
			sid := "kms"
			if s := cfn.Get(st, "Sid"); s != nil {
				sid = s.Value
			}
			out[sid] = st
		}
	}
	return out
}

// The bus door's role: the receiver's claim (PutItem, GetItem, SendMessage
// on the processing queue), its own intake queue as event source, parking
// on its dead-letter queue, and the sources document under SecretsPrefix:
// no signing secret, no wildcard beyond Secrets Manager's suffix. Its
// cold-start check agrees: it passes the document and refuses the secrets.
func TestBusRoleReadsNoSecret(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	want := map[string][]string{
		"Logs":                          {"logs:CreateLogStream", "logs:PutLogEvents"},
		"LedgerClaim":                   {"dynamodb:PutItem", "dynamodb:GetItem"},
		"Enqueue":                       {"sqs:SendMessage"},
		"IntakeEventSource":             {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"},
		"Park":                          {"sqs:SendMessage"},
		"SourcesDocumentSsm":            {"ssm:GetParameter"},
		"SourcesDocumentSecretsManager": {"secretsmanager:GetSecretValue"},
		"kms":                           {"kms:Decrypt"},
		"Tracing":                       {"xray:PutTraceSegments", "xray:PutTelemetryRecords"},
	}
	sts := statementsOf(t, tp, "BusRole")
	for sid, st := range sts {
		w, ok := want[sid]
		if !ok {
			t.Errorf("BusRole statement %s is not one the bus door needs", sid)
			continue
		}
		if got := flatten(cfn.Get(st, "Action")); !slices.Equal(got, w) {
			t.Errorf("BusRole %s actions %v, want %v", sid, got, w)
		}
		if cfn.Get(st, "Effect").Value != "Allow" {
			t.Errorf("BusRole %s is not an Allow", sid)
		}
	}
	for sid := range want {
		if sts[sid] == nil {
			t.Errorf("BusRole lacks %s", sid)
		}
	}
	for sid, res := range map[string]string{"Park": "BusDeadLetterQueue.Arn", "IntakeEventSource": "BusIntakeQueue.Arn", "Enqueue": "Queue.Arn"} {
		if r := cfn.Get(sts[sid], "Resource"); r == nil || r.Value != res {
			t.Errorf("BusRole %s on %v, want %s", sid, r, res)
		}
	}
	const prefix = "hookledger/prod"
	docs := tp.secretStatements(t, "BusRole", prefix)
	ssmARN := func(name string) string { return "arn:aws:ssm:us-east-1:123456789012:parameter" + name }
	smARN := func(name string) string {
		return "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + name + "-AbC123"
	}
	g, err := source.ParseGrants(tp.grantsEnv(t, "BusFunction", "HOOKLEDGER_SECRET_GRANTS", prefix))
	if err != nil {
		t.Fatal(err)
	}
	for name, readable := range map[string]bool{"/hookledger/prod/sources": true, "/hookledger/prod/stripe/acme": false,
		"/hookledger/prod/sources/x": false, "/hookledger/prod/reconcile/stripe-api": false} {
		ssm := source.Ref{Scheme: source.SchemeSSM, Name: name}
		sm := source.Ref{Scheme: source.SchemeSecretsManager, Name: strings.TrimPrefix(name, "/")}
		if allows(docs, "ssm:GetParameter", ssmARN(name)) != readable || allows(docs, "secretsmanager:GetSecretValue", smARN(sm.Name)) != readable {
			t.Errorf("BusRole may read %s: want %v", name, readable)
		}
		if (g.Check(ssm) == nil) != readable || (g.Check(sm) == nil) != readable {
			t.Errorf("the bus door's cold-start check on %s disagrees with its role (readable %v)", name, readable)
		}
	}
	if g, _ := source.ParseGrants(tp.grantsEnv(t, "BusFunction", "HOOKLEDGER_SECRET_GRANTS", "")); g.Check(source.Ref{Scheme: source.SchemeSSM, Name: "/x/sources"}) == nil {
		t.Error("without SecretsPrefix the bus door may read a sources document")
	}
}

// The rule hands every event to the intake queue and asks EventBridge for
// its longest retry, then the dead-letter queue; the intake queue redrives
// there too; only this rule may send to either queue.
func TestBusRuleRetriesThenDeadLetters(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	rule := tp.resource("BusRule")
	if v := cfn.Get(rule, "Properties", "EventBusName"); v == nil || v.Value != "InboundEventBus" {
		t.Errorf("the rule is on %v, want InboundEventBus", v)
	}
	targets := cfn.Get(rule, "Properties", "Targets").Content
	if len(targets) != 1 {
		t.Fatalf("%d targets, want the intake queue", len(targets))
	}
	tg := targets[0]
	if cfn.Get(tg, "Arn").Value != "BusIntakeQueue.Arn" || cfn.Get(tg, "DeadLetterConfig", "Arn").Value != "BusDeadLetterQueue.Arn" ||
		cfn.Get(tg, "RetryPolicy", "MaximumRetryAttempts").Value != "185" || cfn.Get(tg, "RetryPolicy", "MaximumEventAgeInSeconds").Value != "86400" {
		t.Error("the rule's target must be the intake queue, with a day of retries and the bus's dead-letter queue")
	}
	if cfn.Get(tp.resource("BusIntakeQueue"), "Properties", "RedrivePolicy", "deadLetterTargetArn").Value != "BusDeadLetterQueue.Arn" {
		t.Error("the intake queue must redrive to the bus's dead-letter queue")
	}
	st := cfn.Get(tp.resource("BusQueuePolicy"), "Properties", "PolicyDocument", "Statement").Content
	if len(st) != 1 || cfn.Get(st[0], "Principal", "Service").Value != "events.amazonaws.com" ||
		cfn.Get(st[0], "Condition", "ArnEquals", "aws:SourceArn").Value != "BusRule.Arn" {
		t.Error("the queues take messages from EventBridge, for the bus rule only")
	}
	for _, a := range []struct{ alarm, metric string }{{"BusParkedAlarm", "BusParked"}, {"BusDeadLetterQueueNotEmptyAlarm", "ApproximateNumberOfMessagesVisible"}} {
		if m := cfn.Get(tp.resource(a.alarm), "Properties", "MetricName"); m == nil || m.Value != a.metric {
			t.Errorf("%s watches %v, want %s", a.alarm, m, a.metric)
		}
	}
	ev := cfn.Get(tp.resource("BusFunction"), "Properties", "Events", "Intake", "Properties")
	if cfn.Get(ev, "Queue").Value != "BusIntakeQueue.Arn" || !slices.Contains(flatten(cfn.Get(ev, "FunctionResponseTypes")), "ReportBatchItemFailures") {
		t.Error("the bus function reads the intake queue and reports per-message failures")
	}
}

// Event.Forward may put events on ForwardEventBus and nowhere else.
func TestForwardPutsOnOneBus(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	st := statementsOf(t, tp, "ProcessorRole")["ForwardToBus"]
	if st == nil {
		t.Fatal("the processor may not forward")
	}
	if a := flatten(cfn.Get(st, "Action")); !slices.Equal(a, []string{"events:PutEvents"}) {
		t.Errorf("forward actions %v", a)
	}
	if r := cfn.Get(st, "Resource").Value; r != "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/${ForwardEventBus}" {
		t.Errorf("forward resource %s", r)
	}
	for _, p := range cfn.Get(tp.resource("ProcessorRole"), "Properties", "Policies").Content {
		if p.Tag == "!If" && cfn.Get(p.Content[1], "PolicyName").Value == "processor-forward" && p.Content[0].Value != "HasForwardBus" {
			t.Error("the forward policy exists without ForwardEventBus")
		}
	}
}

// evalRule evaluates a rule expression of !Not, !Equals, !Ref and strings
// with the given parameter values.
func evalRule(t *testing.T, n *yaml.Node, params map[string]string) string {
	t.Helper()
	switch n.Tag {
	case "!Ref":
		return params[n.Value]
	case "!Not":
		if evalRule(t, n.Content[0], params) == "true" {
			return "false"
		}
		return "true"
	case "!Equals":
		return strconv.FormatBool(evalRule(t, n.Content[0], params) == evalRule(t, n.Content[1], params))
	case "!!str":
		return n.Value
	}
	t.Fatalf("rule expression %s not evaluated here", n.Tag)
	return ""
}

// A deploy that forwards to the inbound bus is refused: the bus door would
// park every forwarded event (its sources refuse hookledger.* patterns,
// source.TestBadBusConfigsAreClearErrors).
func TestForwardToTheInboundBusIsRefused(t *testing.T) {
	t.Parallel()
	rule := cfn.Get(loadTemplate(t).root, "Rules", "ForwardNotToTheInboundBus")
	if rule == nil {
		t.Fatal("no rule ForwardNotToTheInboundBus")
	}
	for _, c := range []struct {
		forward, inbound string
		refused          bool
	}{{"", "", false}, {"", "in", false}, {"out", "", false}, {"out", "in", false}, {"in", "in", true}} {
		params := map[string]string{"ForwardEventBus": c.forward, "InboundEventBus": c.inbound}
		refused := false
		if evalRule(t, cfn.Get(rule, "RuleCondition"), params) == "true" {
			for _, a := range cfn.Get(rule, "Assertions").Content {
				refused = refused || evalRule(t, cfn.Get(a, "Assert"), params) != "true"
			}
		}
		if refused != c.refused {
			t.Errorf("forward %q, inbound %q: refused %v, want %v", c.forward, c.inbound, refused, c.refused)
		}
	}
}

// The bus door's queues hold any event EventBridge delivers with room for
// the parking's attributes (a reason of at most 1 KB), whatever SQS's default
// was when the stack was created: a parked event keeps its reason.
func TestBusQueuesHoldAnEventAndItsReason(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	for _, q := range []string{"BusIntakeQueue", "BusDeadLetterQueue"} {
		n := cfn.Get(tp.resource(q), "Properties", "MaximumMessageSize")
		if n == nil || n.Value != "1048576" {
			t.Errorf("%s's MaximumMessageSize is %v, want SQS's most, 1048576", q, n)
		}
	}
}
