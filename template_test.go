package hookledger_test

// The template, samconfig.toml and the documented sources examples, pinned:
// what they must hold for a deployment to work (the deployed-stack tests in
// the proof lab prove the rest).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/cfn"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/internal/trace"
	"gopkg.in/yaml.v3"
)

// tmpl is template.yaml as a YAML node tree (CloudFormation's short-form
// tags such as !Ref stay on the nodes).
type tmpl struct{ root *yaml.Node }

func loadTemplate(t *testing.T) tmpl {
	t.Helper()
	root, err := cfn.Read("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return tmpl{root: root}
}

func (tp tmpl) resource(name string) *yaml.Node { return cfn.Get(tp.root, "Resources", name) }

// maxLen is a parameter's MaxLength.
func (tp tmpl) maxLen(t *testing.T, param string) int {
	t.Helper()
	ml := cfn.Get(tp.root, "Parameters", param, "MaxLength")
	if ml == nil {
		t.Fatalf("%s has no MaxLength: its value can push a function's environment past 4 KB", param)
	}
	n, err := strconv.Atoi(ml.Value)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Every function's environment must stay within Lambda's 4 KB (names and
// values together) with every parameter at its longest; AWS refuses the
// deploy otherwise, with a message that does not say what to do.
func TestEnvironmentsFitLambdas4KB(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	if d := cfn.Get(tp.root, "Parameters", "SourcesConfig", "ConstraintDescription"); d == nil || !strings.Contains(d.Value, "ssm:") {
		t.Error("SourcesConfig's ConstraintDescription must name the fix (keep the JSON in SSM or Secrets Manager)")
	}
	prefix := tp.maxLen(t, "SecretsPrefix")
	// Longest values: a generated table name and queue URLs, the grants
	// with the longest prefix, an emulator endpoint, a function name.
	longest := map[string]int{
		"HOOKLEDGER_TABLE": 255, "HOOKLEDGER_RETENTION": len("99999d"), "HOOKLEDGER_SETTINGS": tp.maxLen(t, "PipelineSettings"),
		"HOOKLEDGER_STAGE": 16, "AWS_ENDPOINT_URL": 64, "HOOKLEDGER_QUEUE_URL": 160, "HOOKLEDGER_DLQ_URL": 160,
		"HOOKLEDGER_SOURCES": tp.maxLen(t, "SourcesConfig"), "HOOKLEDGER_PAYLOAD_BUCKET": 63, "HOOKLEDGER_PAYLOAD_STORE_DAYS": 5,
		"HOOKLEDGER_SECRET_GRANTS":      len("ssm=/;secretsmanager_prefix=/;except="+source.ReconcileCredentialsPath) + 2*prefix,
		"HOOKLEDGER_EFFECT_SETTINGS":    tp.maxLen(t, "EffectSettings"),
		"HOOKLEDGER_RECONCILE":          tp.maxLen(t, "ReconcileConfig"),
		"HOOKLEDGER_RECEIVER_FUNCTION":  64, // a function name has at most 64 characters
		"HOOKLEDGER_RECONCILE_GRANTS":   len("ssm=//;secretsmanager_prefix=//") + 2*len(source.ReconcileCredentialsPath) + 2*prefix,
		"HOOKLEDGER_RECONCILE_SCHEDULE": 64, // an edited schedule expression
		"HOOKLEDGER_FORWARD_BUS":        tp.maxLen(t, "ForwardEventBus"),
		"HOOKLEDGER_BUS_DLQ_URL":        160,
		"HOOKLEDGER_SPANS":              len(trace.XRay),
	}
	for _, fn := range []string{"ReceiverFunction", "ProcessorFunction", "ReclaimerFunction", "ReconcilerFunction", "BusFunction"} {
		total := 0
		for _, vars := range []*yaml.Node{cfn.Get(tp.root, "Globals", "Function", "Environment", "Variables"),
			cfn.Get(tp.resource(fn), "Properties", "Environment", "Variables")} {
			if vars == nil {
				t.Fatalf("%s: no environment", fn)
			}
			for i := 0; i+1 < len(vars.Content); i += 2 {
				name := vars.Content[i].Value
				n, ok := longest[name]
				if !ok {
					t.Errorf("%s variable %s has no longest value in this test; add one", fn, name)
				}
				total += len(name) + n
			}
		}
		if total > 4096 {
			t.Errorf("%s's environment can reach %d bytes, over Lambda's 4096: lower a MaxLength", fn, total)
		}
		t.Logf("%s: environment at most %d bytes", fn, total)
	}
}

// PipelineSettings can hold every setting it takes at once.
func TestPipelineSettingsHoldsEverySetting(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	long := map[string]string{ // a long but sensible value of each
		"LOG_LEVEL": "debug", "HOOKLEDGER_MAX_BODY": "6291456", "HOOKLEDGER_MISMATCH": "reject", "HOOKLEDGER_PAYLOAD": "on-trouble",
		"HOOKLEDGER_PAYLOAD_STORE_ABOVE": "1048576", "HOOKLEDGER_MAX_ATTEMPTS": "100", "HOOKLEDGER_UNROUTED": "fail",
		"HOOKLEDGER_SHARDS": "1000", "HOOKLEDGER_RECLAIM_AFTER": "15m", "HOOKLEDGER_RECLAIM_BATCH": "1000",
		"HOOKLEDGER_RECLAIM_MAX_QUEUE": "100000", "HOOKLEDGER_RECLAIM_CHAIN": "15",
	}
	doc := map[string]string{}
	for _, name := range config.SettingNames() {
		v, ok := long[name]
		if !ok {
			t.Errorf("setting %s has no long value in this test; add one", name)
		}
		doc[name] = v
	}
	raw, _ := json.Marshal(doc)
	if max := tp.maxLen(t, "PipelineSettings"); len(raw) > max {
		t.Errorf("every setting takes %d characters, over PipelineSettings' MaxLength %d", len(raw), max)
	}
	if _, err := config.Load(func(k string) string { return map[string]string{config.SettingsVar: string(raw)}[k] }); err != nil {
		t.Errorf("the document with every setting: %v", err)
	}
	if d := cfn.Get(tp.root, "Parameters", "PipelineSettings", "Default"); d == nil || d.Value != "{}" {
		t.Errorf("PipelineSettings default %v, want {} (every default in code)", d)
	}
}

// The template stays readable: at most 20 parameters, each described and
// shown in exactly one parameter group.
func TestParametersAreFewAndDescribed(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	params := cfn.Get(tp.root, "Parameters")
	var names []string
	for i := 0; i+1 < len(params.Content); i += 2 {
		name := params.Content[i].Value
		names = append(names, name)
		if d := cfn.Get(params.Content[i+1], "Description"); d == nil || len(strings.Fields(d.Value)) < 5 {
			t.Errorf("parameter %s has no description worth the name", name)
		}
	}
	if len(names) > 20 {
		t.Errorf("%d parameters, more than 20: a setting with a default in code belongs in PipelineSettings, a fixed value in Mappings: Defaults", len(names))
	}
	t.Logf("%d parameters: %s", len(names), strings.Join(names, ", "))
	grouped := map[string]int{}
	for _, g := range cfn.Get(tp.root, "Metadata", "AWS::CloudFormation::Interface", "ParameterGroups").Content {
		for _, p := range cfn.Get(g, "Parameters").Content {
			grouped[p.Value]++
			if cfn.Get(params, p.Value) == nil {
				t.Errorf("parameter group %q lists %s, which is not a parameter", cfn.Get(g, "Label", "default").Value, p.Value)
			}
		}
	}
	for _, name := range names {
		if grouped[name] != 1 {
			t.Errorf("parameter %s is in %d parameter groups, want exactly one", name, grouped[name])
		}
	}
}

// The stack's fixed values live in one place, Mappings: Defaults, each
// used and documented.
func TestFixedValuesLiveInDefaults(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	raw, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	stack := cfn.Get(tp.root, "Mappings", "Defaults", "Stack")
	if stack == nil || len(stack.Content) == 0 {
		t.Fatal("no Mappings: Defaults: Stack in template.yaml")
	}
	for i := 0; i+1 < len(stack.Content); i += 2 {
		key := stack.Content[i].Value
		if !strings.Contains(string(raw), "!FindInMap [Defaults, Stack, "+key+"]") {
			t.Errorf("Defaults %s is never used", key)
		}
		if !strings.Contains(string(doc), "`"+key+"`") {
			t.Errorf("docs/configuration.md does not document the fixed value %s", key)
		}
	}
}

// docs/configuration.md documents every parameter and every setting
// PipelineSettings takes.
func TestEverySettingIsDocumented(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	doc, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range config.SettingNames() {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/configuration.md does not document %s", name)
		}
	}
	params := cfn.Get(tp.root, "Parameters")
	for i := 0; i+1 < len(params.Content); i += 2 {
		if name := params.Content[i].Value; !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/configuration.md does not document the parameter %s", name)
		}
	}
}

// A reserved concurrency of 1 cannot be deployed on an account whose
// concurrency quota is 10 (Lambda keeps 10 unreserved): the default must
// reserve nothing.
func TestReclaimerReservesNoConcurrencyByDefault(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	if rce := cfn.Get(tp.resource("ReclaimerFunction"), "Properties", "ReservedConcurrentExecutions"); rce != nil {
		t.Fatalf("the reclaimer reserves concurrency (%s %s); reserve nothing by default", rce.Tag, rce.Value)
	}
}

// LargeBodyStoreDays is the payload store's switch and its objects' life:
// 0 creates no bucket; N creates one whose objects expire after N days,
// which the receiver learns so that it can refuse a store shorter than a
// source's retention. The body cap stays in code (config.MaxBodyLimit,
// config.MaxBodyWithStore), and the parameter says what it is.
func TestLargeBodyStoreDays(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	p := cfn.Get(tp.root, "Parameters", "LargeBodyStoreDays")
	if p == nil || cfn.Get(p, "Default").Value != "0" || cfn.Get(p, "MinValue").Value != "0" {
		t.Fatal("LargeBodyStoreDays must default to 0 (no store) and allow 0")
	}
	if d := cfn.Get(p, "Description").Value; !strings.Contains(d, strconv.Itoa(config.MaxBodyWithStore>>20)+" MiB") || !strings.Contains(d, "HOOKLEDGER_MAX_BODY") {
		t.Errorf("LargeBodyStoreDays' description must say that HOOKLEDGER_MAX_BODY may then go up to %d MiB: %q", config.MaxBodyWithStore>>20, d)
	}
	if c := cfn.Get(tp.root, "Conditions", "HasPayloadStore"); c == nil || !strings.Contains(fmt.Sprint(flatten(c)), "LargeBodyStoreDays") {
		t.Error("HasPayloadStore must come from LargeBodyStoreDays")
	}
	rules := cfn.Get(tp.resource("PayloadBucket"), "Properties", "LifecycleConfiguration", "Rules")
	if e := cfn.Get(rules.Content[0], "ExpirationInDays"); e == nil || e.Tag != "!Ref" || e.Value != "LargeBodyStoreDays" {
		t.Errorf("the bucket's objects must expire after LargeBodyStoreDays: %v", e)
	}
	days := cfn.Get(tp.resource("ReceiverFunction"), "Properties", "Environment", "Variables", "HOOKLEDGER_PAYLOAD_STORE_DAYS")
	if days == nil || !strings.Contains(fmt.Sprint(flatten(days)), "LargeBodyStoreDays") {
		t.Error("the receiver must get HOOKLEDGER_PAYLOAD_STORE_DAYS from LargeBodyStoreDays (it checks the store against the retention)")
	}
}

// flatten lists a node's scalar values, depth first.
func flatten(n *yaml.Node) []string {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, flatten(c)...)
	}
	return out
}

// The queue takes the 1 MiB messages internal/queue sends.
func TestQueueTakesTheLargestMessages(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	for _, q := range []string{"Queue", "DeadLetterQueue"} {
		if v := cfn.Get(tp.resource(q), "Properties", "MaximumMessageSize"); v == nil || v.Value != strconv.Itoa(queue.MaxMessageBytes) {
			t.Errorf("%s MaximumMessageSize %v, want %d (queue.MaxMessageBytes)", q, v, queue.MaxMessageBytes)
		}
	}
}

// The payload store's bucket: encrypted, private, owner-enforced, TLS only,
// and its objects expire; each role reaches only the payloads prefix, with
// only the action its code makes.
func TestPayloadStoreBucketIsLockedDown(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	b := tp.resource("PayloadBucket")
	if v := cfn.Get(b, "Condition"); v == nil || v.Value != "HasPayloadStore" {
		t.Error("PayloadBucket must exist only with PayloadStore=s3")
	}
	if v := cfn.Get(b, "Properties", "BucketEncryption", "ServerSideEncryptionConfiguration"); v == nil {
		t.Error("PayloadBucket has no default encryption")
	}
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if v := cfn.Get(b, "Properties", "PublicAccessBlockConfiguration", k); v == nil || v.Value != "true" {
			t.Errorf("PayloadBucket %s is not true", k)
		}
	}
	if v := cfn.Get(b, "Properties", "OwnershipControls", "Rules"); v == nil || cfn.Get(v.Content[0], "ObjectOwnership").Value != "BucketOwnerEnforced" {
		t.Error("PayloadBucket must enforce bucket-owner ownership")
	}
	rules := cfn.Get(b, "Properties", "LifecycleConfiguration", "Rules")
	if rules == nil || cfn.Get(rules.Content[0], "ExpirationInDays") == nil || cfn.Get(rules.Content[0], "Prefix").Value != config.DefaultPayloadPrefix {
		t.Error("PayloadBucket objects under the payloads prefix must expire")
	}
	pol := cfn.Get(tp.resource("PayloadBucketPolicy"), "Properties", "PolicyDocument", "Statement")
	if pol == nil || cfn.Get(pol.Content[0], "Effect").Value != "Deny" || cfn.Get(pol.Content[0], "Condition", "Bool", "aws:SecureTransport") == nil {
		t.Error("PayloadBucketPolicy must deny requests without TLS")
	}
	want := map[string]string{"ReceiverRole": "s3:PutObject", "ProcessorRole": "s3:GetObject", "ReclaimerRole": "s3:GetObject"}
	for role, action := range want {
		found := false
		for _, p := range cfn.Get(tp.resource(role), "Properties", "Policies").Content {
			if p.Tag != "!If" || len(p.Content) < 2 || p.Content[0].Value != "HasPayloadStore" {
				continue
			}
			st := cfn.Get(p.Content[1], "PolicyDocument", "Statement").Content[0]
			if a := cfn.Get(st, "Action"); a == nil || a.Value != action {
				t.Errorf("%s payload store grant: action %v, want only %s", role, a, action)
			}
			if r := cfn.Get(st, "Resource"); r == nil || !strings.HasSuffix(r.Value, "/"+config.DefaultPayloadPrefix+"*") {
				t.Errorf("%s payload store grant: resource %v, want the payloads prefix only", role, r)
			}
			found = true
		}
		if !found {
			t.Errorf("%s has no payload store grant", role)
		}
	}
}

// A 503 for a server-side cause is not a Lambda error: alarms must watch
// each front door's 5xx, and NeedsOperator, which the receiver counts for
// an unreadable secret and the reclaimer for what it finds on the DLQ
// (their own alarms went: the same conditions, one signal).
func TestServerSideFailuresAreAlarmed(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	want := map[string]bool{"hookledger/NeedsOperator": false, "AWS/ApiGateway/5xx": false,
		"AWS/Lambda/Url5xxCount": false, "AWS/SQS/ApproximateAgeOfOldestMessage": false}
	res := cfn.Get(tp.root, "Resources")
	for i := 0; i+1 < len(res.Content); i += 2 {
		r := res.Content[i+1]
		if cfn.Get(r, "Type").Value != "AWS::CloudWatch::Alarm" {
			continue
		}
		key := cfn.Get(r, "Properties", "Namespace").Value + "/" + cfn.Get(r, "Properties", "MetricName").Value
		if _, ok := want[key]; ok {
			want[key] = true
		}
	}
	for k, found := range want {
		if !found {
			t.Errorf("no alarm on %s", k)
		}
	}
	// NeedsOperator stands for the DLQ only while the reclaimer reads it.
	env := cfn.Get(tp.resource("ReclaimerFunction"), "Properties", "Environment", "Variables", "HOOKLEDGER_DLQ_URL")
	if env == nil || env.Tag != "!Ref" || env.Value != "DeadLetterQueue" {
		t.Errorf("the reclaimer's HOOKLEDGER_DLQ_URL is %v, want !Ref DeadLetterQueue: its pass is the DLQ's alarm", env)
	}
}

// defaultAlarms are the alarms a deployment with every parameter at its
// default gets (the HTTP API front door, no reconciler), each with the
// metric it watches.
func (tp tmpl) defaultAlarms(t *testing.T) map[string]string {
	t.Helper()
	off := map[string]bool{"HasFunctionUrl": true, "ReconcileOn": true, "HasInboundBus": true} // false at the defaults
	out := map[string]string{}
	res := cfn.Get(tp.root, "Resources")
	for i := 0; i+1 < len(res.Content); i += 2 {
		r := res.Content[i+1]
		if cfn.Get(r, "Type").Value != "AWS::CloudWatch::Alarm" {
			continue
		}
		if c := cfn.Get(r, "Condition"); c != nil && off[c.Value] {
			continue
		} else if c != nil && c.Value != "HasHttpApi" {
			t.Fatalf("alarm %s has condition %s: say here whether the defaults turn it on", res.Content[i].Value, c.Value)
		}
		if cfn.Get(r, "Properties", "Metrics") != nil {
			t.Fatalf("alarm %s watches a metric math expression: CloudWatch bills each metric in it as an alarm of its own; count them here", res.Content[i].Value)
		}
		out[res.Content[i].Value] = cfn.Get(r, "Properties", "Namespace").Value + "/" + cfn.Get(r, "Properties", "MetricName").Value
	}
	return out
}

// An alarm costs $0.10 a month per metric it watches, whether it ever
// fires: a shipped deployment keeps one alarm per operator action (docs/
// deploy.md lists them with what to do), and one signal carries several
// causes where the action is the same (NeedsOperator). Regression: 16
// alarms at the defaults ($1.60 a month, more than the rest of an idle
// deployment together); then 7, with the DLQ's and the unreadable
// secrets' own, whose conditions NeedsOperator and the 5xx alarm page on
// already.
func TestAlarmsAreOnePerOperatorAction(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	alarms := tp.defaultAlarms(t)
	if len(alarms) > 5 {
		t.Errorf("%d alarms at the defaults (%v), want at most 5", len(alarms), alarms)
	}
	doc, err := os.ReadFile("docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	res := cfn.Get(tp.root, "Resources")
	for i := 0; i+1 < len(res.Content); i += 2 {
		name := res.Content[i].Value
		if cfn.Get(res.Content[i+1], "Type").Value == "AWS::CloudWatch::Alarm" && !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/deploy.md's alarm table does not list %s", name)
		}
	}
	d := cfn.Get(tp.resource("NeedsOperatorAlarm"), "Properties", "AlarmDescription")
	for _, want := range []string{"Dead", "Indeterminate", "Parked", "BodyMismatch", "DeadLettersCleared", "DeadLettersLeft", "hookledger replay", "--dlq",
		"SecretUnavailable", "Logs Insights", "${ProcessorLogGroup}", "${ReclaimerLogGroup}", "${ReceiverLogGroup}"} {
		if d == nil || !strings.Contains(d.Value, want) {
			t.Errorf("NeedsOperatorAlarm's description does not say %q (how to find which cause, and what to do)", want)
		}
	}
	if d != nil && len(d.Value)+3*64 > 1024 { // CloudWatch's limit, with the three log groups' names
		t.Errorf("NeedsOperatorAlarm's description is %d characters; CloudWatch takes 1024 with the log groups' names", len(d.Value))
	}
}

// Lambda's own START, END and REPORT lines (INFO, one set per invocation)
// are not kept; the functions' lines pass whatever their level, so that
// LOG_LEVEL alone decides them and the metric lines (no level: INFO to
// Lambda) are never filtered out.
func TestPlatformLogLinesAreDropped(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	lc := cfn.Get(tp.root, "Globals", "Function", "LoggingConfig")
	for key, want := range map[string]string{"LogFormat": "JSON", "SystemLogLevel": "WARN", "ApplicationLogLevel": "TRACE"} {
		if v := cfn.Get(lc, key); v == nil || v.Value != want {
			t.Errorf("Globals LoggingConfig %s = %v, want %s", key, v, want)
		}
	}
	if cfn.Get(lc, "LogGroup") != nil {
		t.Error("LoggingConfig names a log group: the functions' log groups (with retention, and the roles' grants) are /aws/lambda/<function>")
	}
}

// The batching window delays processing, not the sender's answer, and a
// gathered message stays invisible: for every allowed timeout and window
// the queue's visibility timeout exceeds the longest a batch is gathered
// (the window, or the 20 s AWS may hold one at very low traffic) plus the
// processor's timeout.
func TestBatchWindowFitsTheVisibilityTimeout(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	esm := cfn.Get(tp.resource("ProcessorFunction"), "Properties", "Events", "Queue", "Properties")
	if w := cfn.Get(esm, "MaximumBatchingWindowInSeconds"); w == nil || w.Tag != "!Ref" || w.Value != "BatchWindowSeconds" {
		t.Fatalf("the event source's MaximumBatchingWindowInSeconds is %v, want !Ref BatchWindowSeconds", w)
	}
	for _, tv := range cfn.Get(tp.root, "Parameters", "EffectTimeoutSeconds", "AllowedValues").Content {
		timeout, _ := strconv.Atoi(tv.Value)
		vis, _ := strconv.Atoi(cfn.Get(tp.root, "Mappings", "ProcessorTimeouts", tv.Value, "VisibilityTimeout").Value)
		for _, wv := range cfn.Get(tp.root, "Parameters", "BatchWindowSeconds", "AllowedValues").Content {
			window, _ := strconv.Atoi(wv.Value)
			if gather := max(window, 20); vis < gather+timeout {
				t.Errorf("timeout %d s, window %d s: visibility %d s < gathering %d s + timeout", timeout, window, vis, gather)
			}
		}
	}
}

// A dashboard costs $3.00 a month beyond an account's first three: only the
// prod stage gets one.
func TestOnlyProdGetsADashboard(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	if c := cfn.Get(tp.resource("Dashboard"), "Condition"); c == nil || c.Value != "IsProd" {
		t.Errorf("the dashboard's condition is %v, want IsProd", c)
	}
	if c := cfn.Get(tp.root, "Outputs", "DashboardName", "Condition"); c == nil || c.Value != "IsProd" {
		t.Errorf("the DashboardName output's condition is %v, want IsProd", c)
	}
}

// grantsEnv is a function's grants variable as the template sets it for
// SecretsPrefix=prefix.
func (tp tmpl) grantsEnv(t *testing.T, fn, variable, prefix string) string {
	t.Helper()
	v := cfn.Get(tp.resource(fn), "Properties", "Environment", "Variables", variable)
	if v == nil || v.Tag != "!If" || len(v.Content) != 3 || v.Content[0].Value != "HasSecretsPrefix" || v.Content[1].Tag != "!Sub" {
		t.Fatalf("%s %s must be !If [HasSecretsPrefix, !Sub ..., nothing granted]", fn, variable)
	}
	if prefix == "" {
		return v.Content[2].Value
	}
	return strings.ReplaceAll(v.Content[1].Value, "${SecretsPrefix}", prefix)
}

// statement is one IAM statement of a role's secret policies, with the
// template's substitutions made.
type statement struct {
	effect    string
	actions   []string
	resources []string
}

// secretStatements returns the statements of a role's HasSecretsPrefix
// policy for SecretsPrefix=prefix, in account 123456789012, us-east-1.
func (tp tmpl) secretStatements(t *testing.T, role, prefix string) []statement {
	t.Helper()
	r := strings.NewReplacer("${AWS::Partition}", "aws", "${AWS::Region}", "us-east-1", "${AWS::AccountId}", "123456789012", "${SecretsPrefix}", prefix)
	var out []statement
	for _, p := range cfn.Get(tp.resource(role), "Properties", "Policies").Content {
		if p.Tag != "!If" || len(p.Content) < 2 || p.Content[0].Value != "HasSecretsPrefix" {
			continue
		}
		for _, st := range cfn.Get(p.Content[1], "PolicyDocument", "Statement").Content {
			s := statement{effect: cfn.Get(st, "Effect").Value}
			s.actions = flatten(cfn.Get(st, "Action"))
			for _, res := range flatten(cfn.Get(st, "Resource")) {
				s.resources = append(s.resources, r.Replace(res))
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no HasSecretsPrefix policy", role)
	}
	return out
}

// allows evaluates the statements as IAM does: an explicit deny wins, then
// an allow.
func allows(sts []statement, action, arn string) bool {
	allowed := false
	for _, s := range sts {
		if !slices.Contains(s.actions, action) || !slices.ContainsFunc(s.resources, func(p string) bool { return iamMatch(p, arn) }) {
			continue
		}
		if s.effect == "Deny" {
			return false
		}
		allowed = true
	}
	return allowed
}

// iamMatch matches an IAM resource pattern: * any run, ? one character.
func iamMatch(pat, s string) bool {
	if pat == "" {
		return s == ""
	}
	switch pat[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if iamMatch(pat[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && iamMatch(pat[1:], s[1:])
	}
	return s != "" && s[0] == pat[0] && iamMatch(pat[1:], s[1:])
}

// SecretsPrefix grants the receiver, the processor and the reconciler what
// lies under it in both stores, and the code's cold-start check agrees with
// the roles: every reference the check passes, the role may read, and
// every one the role may not read, the check refuses. The reconciler's
// credentials path is denied to the receiver and the processor and is
// where the reconciler's own check looks.
func TestSecretsPrefixGrantsAgreeWithTheRoles(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	const prefix = "hookledger/prod"
	ssmARN := func(name string) string { return "arn:aws:ssm:us-east-1:123456789012:parameter" + name }
	// A secret's real ARN carries the random suffix, whatever the reference gives.
	smARN := func(name string) string {
		return "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + name + "-AbC123"
	}
	refs := []string{
		"ssm:/hookledger/prod/stripe/acme", "ssm:/hookledger/prod/reconcile/stripe-api", "ssm:/hookledger/production/x",
		"ssm:/hookledger/prod", "ssm:/hookledger/other/x", "ssm:/hookledger/prod/reconciled",
		"secretsmanager:hookledger/prod/stripe/globex", "secretsmanager:hookledger/prod/reconcile/stripe-api",
		"secretsmanager:hookledger/prod-x/y", "secretsmanager:hookledger/production/x", "secretsmanager:hookledger/prod",
		"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:hookledger/prod/github/acme",
	}
	arnOf := func(ref source.Ref) (action, arn string) {
		if ref.Scheme == source.SchemeSSM {
			return "ssm:GetParameter", ssmARN(ref.Name)
		}
		name := ref.Name
		if _, after, ok := strings.Cut(name, ":secret:"); ok {
			name = after
		}
		return "secretsmanager:GetSecretValue", smARN(name)
	}
	check := func(fn, role, variable string, names source.GrantNames, want map[string]bool) {
		g, err := source.ParseGrantsFor(tp.grantsEnv(t, fn, variable, prefix), names)
		if err != nil {
			t.Fatalf("%s %s: %v", fn, variable, err)
		}
		sts := tp.secretStatements(t, role, prefix)
		for _, raw := range refs {
			ref, err := source.ParseRef(raw)
			if err != nil {
				t.Fatal(err)
			}
			action, arn := arnOf(ref)
			passes, readable := g.Check(ref) == nil, allows(sts, action, arn)
			if passes && !readable {
				t.Errorf("%s: the cold-start check passes %s, which %s may not read: every delivery would get AccessDenied", fn, raw, role)
			}
			if w, ok := want[raw]; ok && passes != w {
				t.Errorf("%s: %s passes the check: %v, want %v", fn, raw, passes, w)
			}
		}
		for _, st := range sts {
			for _, r := range st.resources {
				if strings.Count(r, "*") != 1 || !strings.HasSuffix(r, "/*") || strings.Contains(r, "?") {
					t.Errorf("%s: resource %s: the only wildcard is the one after the prefix", role, r)
				}
			}
		}
	}
	signing := map[string]bool{
		"ssm:/hookledger/prod/stripe/acme": true, "ssm:/hookledger/prod/reconcile/stripe-api": false,
		"ssm:/hookledger/production/x": false, "ssm:/hookledger/prod/reconciled": true,
		"secretsmanager:hookledger/prod/stripe/globex": true, "secretsmanager:hookledger/prod/reconcile/stripe-api": false,
		"secretsmanager:hookledger/prod-x/y": false,
		"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:hookledger/prod/github/acme": true,
	}
	check("ReceiverFunction", "ReceiverRole", "HOOKLEDGER_SECRET_GRANTS", source.ReceiverGrants, signing)
	check("ProcessorFunction", "ProcessorRole", "HOOKLEDGER_SECRET_GRANTS", source.ReceiverGrants, signing)
	// Neither role may read the reconciler's credentials, whatever the check says.
	for _, role := range []string{"ReceiverRole", "ProcessorRole"} {
		sts := tp.secretStatements(t, role, prefix)
		for _, name := range []string{"/hookledger/prod/" + source.ReconcileCredentialsPath + "stripe-api"} {
			if allows(sts, "ssm:GetParameter", ssmARN(name)) || allows(sts, "secretsmanager:GetSecretValue", smARN(strings.TrimPrefix(name, "/"))) {
				t.Errorf("%s may read the reconciler's credential %s", role, name)
			}
		}
		if !allows(sts, "ssm:GetParameter", ssmARN("/hookledger/prod/stripe/acme")) || !allows(sts, "secretsmanager:GetSecretValue", smARN("hookledger/prod/stripe/acme")) {
			t.Errorf("%s may not read the secrets under the prefix", role)
		}
	}
	check("ReconcilerFunction", "ReconcilerRole", "HOOKLEDGER_RECONCILE_GRANTS", source.ReconcileCredentialGrants, map[string]bool{
		"ssm:/hookledger/prod/reconcile/stripe-api": true, "secretsmanager:hookledger/prod/reconcile/stripe-api": true,
		"ssm:/hookledger/prod/stripe/acme": false,
	})
	// The reconciler signs with the receiver's grants (it reads them from
	// the receiver's configuration): its role must read all of those.
	g, _ := source.ParseGrants(tp.grantsEnv(t, "ReceiverFunction", "HOOKLEDGER_SECRET_GRANTS", prefix))
	sts := tp.secretStatements(t, "ReconcilerRole", prefix)
	for _, raw := range refs {
		ref, _ := source.ParseRef(raw)
		if action, arn := arnOf(ref); g.Check(ref) == nil && !allows(sts, action, arn) {
			t.Errorf("the reconciler's role may not read the signing secret %s", raw)
		}
	}
	if a, b := tp.grantsEnv(t, "ReceiverFunction", "HOOKLEDGER_SECRET_GRANTS", prefix), tp.grantsEnv(t, "ProcessorFunction", "HOOKLEDGER_SECRET_GRANTS", prefix); a != b {
		t.Errorf("the receiver's grants %q and the processor's %q differ; their roles are the same", a, b)
	}
	// Without SecretsPrefix nothing is granted, and references are still
	// checked (and refused) at cold start.
	for _, fn := range []string{"ReceiverFunction", "ProcessorFunction"} {
		g, err := source.ParseGrants(tp.grantsEnv(t, fn, "HOOKLEDGER_SECRET_GRANTS", ""))
		if err != nil || g.Check(source.Ref{Scheme: source.SchemeSSM, Name: "/hookledger/prod/x"}) == nil {
			t.Errorf("%s without SecretsPrefix: %+v %v; want every reference refused", fn, g, err)
		}
	}
}

// The second front door: a function URL in front of the receiver, chosen by
// FrontDoor (HttpApi by default, so an existing stack keeps its URL). Each
// door's resources exist only with it (cfn-lint checks every reference
// against the conditions); the URL is public (AuthType NONE: the receiver's
// signature check authenticates) with exactly the two statements Lambda
// requires; each door has its 5xx alarm and its output; the receiver's
// reserved concurrency, the function URL's only bound, reserves none by
// default.
func TestFrontDoorResources(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	if d := cfn.Get(tp.root, "Parameters", "FrontDoor", "Default"); d == nil || d.Value != "HttpApi" {
		t.Errorf("FrontDoor default %v, want HttpApi", d)
	}
	cond := func(name string) string {
		if c := cfn.Get(tp.resource(name), "Condition"); c != nil {
			return c.Value
		}
		return ""
	}
	for name, want := range map[string]string{
		"HttpApi": "HasHttpApi", "ReceiverIntegration": "HasHttpApi", "WebhookRoute": "HasHttpApi", "HttpApiStage": "HasHttpApi",
		"ReceiverInvokePermission": "HasHttpApi", "ApiAccessLogGroup": "HasHttpApi", "Api5xxAlarm": "HasHttpApi",
		"ReceiverFunctionUrl": "HasFunctionUrl", "ReceiverUrlPublicPermission": "HasFunctionUrl",
		"ReceiverUrlInvokePermission": "HasFunctionUrl", "FunctionUrl5xxAlarm": "HasFunctionUrl",
		"ReceiverFunction": "", "LedgerTable": "",
	} {
		if got := cond(name); got != want {
			t.Errorf("%s: condition %q, want %q", name, got, want)
		}
	}
	url := tp.resource("ReceiverFunctionUrl")
	if v := cfn.Get(url, "Properties", "AuthType"); v == nil || v.Value != "NONE" {
		t.Errorf("function URL AuthType %v, want NONE (senders cannot sign AWS requests)", v)
	}
	prop := func(res, key string) string {
		if v := cfn.Get(tp.resource(res), "Properties", key); v != nil {
			return v.Value
		}
		return ""
	}
	if prop("ReceiverUrlPublicPermission", "Action") != "lambda:InvokeFunctionUrl" || prop("ReceiverUrlPublicPermission", "Principal") != "*" ||
		prop("ReceiverUrlPublicPermission", "FunctionUrlAuthType") != "NONE" {
		t.Error("ReceiverUrlPublicPermission must grant lambda:InvokeFunctionUrl to * only for FunctionUrlAuthType NONE")
	}
	if prop("ReceiverUrlInvokePermission", "Action") != "lambda:InvokeFunction" || prop("ReceiverUrlInvokePermission", "Principal") != "*" ||
		prop("ReceiverUrlInvokePermission", "InvokedViaFunctionUrl") != "true" {
		t.Error("ReceiverUrlInvokePermission must grant lambda:InvokeFunction to * only when InvokedViaFunctionUrl")
	}
	for _, p := range []string{"ReceiverUrlPublicPermission", "ReceiverUrlInvokePermission"} {
		if prop(p, "FunctionName") != "ReceiverFunction" {
			t.Errorf("%s must name the receiver, not another function", p)
		}
	}
	for out, want := range map[string]string{"WebhookUrl": "", "HttpApiWebhookUrl": "HasHttpApi", "FunctionUrlWebhookUrl": "HasFunctionUrl", "ApiEndpoint": "HasHttpApi"} {
		o := cfn.Get(tp.root, "Outputs", out)
		if o == nil {
			t.Errorf("no output %s", out)
			continue
		}
		if c := cfn.Get(o, "Condition"); (c == nil && want != "") || (c != nil && c.Value != want) {
			t.Errorf("output %s condition %v, want %q", out, c, want)
		}
	}
	rce := cfn.Get(tp.resource("ReceiverFunction"), "Properties", "ReservedConcurrentExecutions")
	if rce == nil || rce.Tag != "!If" || len(rce.Content) != 3 || rce.Content[0].Value != "HasReceiverReservation" || rce.Content[2].Value != "AWS::NoValue" {
		t.Error("the receiver's ReservedConcurrentExecutions must be !If [HasReceiverReservation, ReceiverConcurrency, AWS::NoValue]")
	}
	if d := cfn.Get(tp.root, "Parameters", "ReceiverConcurrency", "Default"); d == nil || d.Value != "0" {
		t.Errorf("ReceiverConcurrency default %v, want 0 (accounts with a quota of 10 cannot reserve)", d)
	}
}

// The reconciler is off unless ReconcileConfig lists a source, and an
// alarm watches what it finds.
func TestReconcilerIsOptionalAndAlarmed(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	if d := cfn.Get(tp.root, "Parameters", "ReconcileConfig", "Default"); d == nil || d.Value != "[]" {
		t.Errorf("ReconcileConfig default %v, want [] (no reconciler)", d)
	}
	if c := fmt.Sprint(flatten(cfn.Get(tp.root, "Conditions", "ReconcileOn"))); !strings.Contains(c, "ReconcileConfig") {
		t.Errorf("ReconcileOn must come from ReconcileConfig: %s", c)
	}
	for _, name := range []string{"ReconcilerRole", "ReconcilerLogGroup", "ReconcilerFunction", "ReconcileMissingAlarm", "ReconcilerErrorsAlarm"} {
		if c := cfn.Get(tp.resource(name), "Condition"); c == nil || c.Value != "ReconcileOn" {
			t.Errorf("%s is not conditional on ReconcileOn", name)
		}
	}
	a := tp.resource("ReconcileMissingAlarm")
	if cfn.Get(a, "Properties", "MetricName").Value != "ReconcileMissing" || cfn.Get(a, "Properties", "Threshold").Value != "0" ||
		cfn.Get(a, "Properties", "ComparisonOperator").Value != "GreaterThanThreshold" {
		t.Error("ReconcileMissingAlarm must fire when ReconcileMissing > 0")
	}
}

// sam deploy --guided asks every parameter. Enter keeps the default it
// shows (samconfig.toml's or the template's), but a NoEcho parameter shows
// none and is asked again until something is typed. So only SourcesConfig
// (the senders: a first deploy needs them) may be NoEcho or lack a default;
// ReconcileConfig was NoEcho, and guided asked until one typed [].
func TestGuidedDeployAsksOnlyForSourcesConfig(t *testing.T) {
	t.Parallel()
	params := cfn.Get(loadTemplate(t).root, "Parameters")
	for i := 0; i+1 < len(params.Content); i += 2 {
		name, p := params.Content[i].Value, params.Content[i+1]
		noEcho := cfn.Get(p, "NoEcho")
		mustType := cfn.Get(p, "Default") == nil || (noEcho != nil && noEcho.Value == "true")
		if mustType != (name == "SourcesConfig") {
			t.Errorf("%s: NoEcho %v, Default %v; want a visible default (Enter keeps it) for all but SourcesConfig", name, noEcho != nil, cfn.Get(p, "Default") != nil)
		}
	}
}

// overrides reads a samconfig.toml section's parameter_overrides.
func overrides(t *testing.T, section string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "["+section+".deploy.parameters]")
	if !ok {
		t.Fatalf("samconfig.toml has no [%s.deploy.parameters]", section)
	}
	if i := strings.Index(after, "\n["); i >= 0 {
		after = after[:i]
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*["']([A-Za-z]+)=(.*?)["'],?\s*$`).FindAllStringSubmatch(after, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// grantsOf is what the template grants the receiver with a samconfig.toml
// section's SecretsPrefix.
func grantsOf(t *testing.T, section string) source.Grants {
	t.Helper()
	tp := loadTemplate(t)
	prefix := overrides(t, section)["SecretsPrefix"]
	g, err := source.ParseGrants(tp.grantsEnv(t, "ReceiverFunction", "HOOKLEDGER_SECRET_GRANTS", prefix))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// sourcesExamples returns every JSON block (fenced, or the quoted value of a
// SourcesConfig line) in a doc that is a sources config.
func sourcesExamples(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(m[1], `"tenants"`) && !strings.Contains(m[1], "<source>") {
			out = append(out, m[1])
		}
	}
	for _, m := range regexp.MustCompile(`SourcesConfig: '(\{.*\})'`).FindAllStringSubmatch(string(raw), -1) {
		out = append(out, m[1])
	}
	return out
}

func TestDocumentedSourcesAreValidAndWithinTheGrants(t *testing.T) {
	t.Parallel()
	prod := grantsOf(t, "prod")
	if prod.SSMPath == "" || prod.SecretsManagerPrefix == "" {
		t.Fatalf("samconfig.toml [prod] grants %+v; the docs' examples need SecretsPrefix", prod)
	}
	total := 0
	for _, doc := range []string{"README.md", "docs/deploy.md", "docs/providers.md", "docs/eventbridge.md"} {
		for _, ex := range sourcesExamples(t, doc) {
			total++
			var probe map[string]json.RawMessage
			if err := json.NewDecoder(bytes.NewReader([]byte(ex))).Decode(&probe); err != nil {
				t.Errorf("%s: example is not JSON: %v\n%s", doc, err, ex)
				continue
			}
			cfg, err := source.Parse([]byte(ex))
			if err != nil {
				t.Errorf("%s: %v", doc, err)
				continue
			}
			reg, err := source.NewRegistry(cfg, &source.Secrets{})
			if err != nil {
				t.Errorf("%s: %v", doc, err)
				continue
			}
			if err := reg.CheckGrants(prod); err != nil {
				t.Errorf("%s: an example references secrets samconfig.toml's prod section does not grant:\n%v", doc, err)
			}
		}
	}
	if total < 4 {
		t.Errorf("found only %d sources examples in the docs; the extraction broke", total)
	}
}

// make e2e deploys with the dev section's SecretsPrefix and stores its
// secrets under it; every section sets one, and names only parameters the
// template has.
func TestSamconfigSections(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	for _, section := range []string{"default", "dev", "prod"} {
		o := overrides(t, section)
		if want := "hookledger/" + section; o["SecretsPrefix"] == "" || section != "default" && o["SecretsPrefix"] != want {
			t.Errorf("[%s] SecretsPrefix=%q, want %s", section, o["SecretsPrefix"], want)
		}
		if len(o) < 3 {
			t.Fatalf("[%s]: read only %v; the extraction broke", section, o)
		}
		for name := range o {
			if cfn.Get(tp.root, "Parameters", name) == nil {
				t.Errorf("[%s] sets %s, which is not a template parameter", section, name)
			}
		}
	}
}
