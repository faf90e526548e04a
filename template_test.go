package hookledger_test

// The template, samconfig.toml and the documented sources examples, pinned:
// what they must hold for a deployment to work (the deployed-stack tests in
// the proof lab prove the rest).

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/source"
	"gopkg.in/yaml.v3"
)

// tmpl is template.yaml as a YAML node tree (CloudFormation's short-form
// tags such as !Ref stay on the nodes).
type tmpl struct{ root *yaml.Node }

func loadTemplate(t *testing.T) tmpl {
	t.Helper()
	raw, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return tmpl{root: doc.Content[0]}
}

// get walks mapping keys; nil when a key is missing.
func get(n *yaml.Node, path ...string) *yaml.Node {
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

func (tp tmpl) resource(name string) *yaml.Node { return get(tp.root, "Resources", name) }

// The receiver's environment must stay within Lambda's 4 KB (names and
// values together) with every parameter at its longest; AWS refuses the
// deploy otherwise, with a message that does not say what to do.
func TestReceiverEnvironmentFitsLambdas4KB(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	ml := get(tp.root, "Parameters", "SourcesConfig", "MaxLength")
	if ml == nil {
		t.Fatal("SourcesConfig has no MaxLength: its JSON can push the environment past 4 KB")
	}
	maxLen, err := strconv.Atoi(ml.Value)
	if err != nil {
		t.Fatal(err)
	}
	if d := get(tp.root, "Parameters", "SourcesConfig", "ConstraintDescription"); d == nil || !strings.Contains(d.Value, "ssm:") {
		t.Error("SourcesConfig's ConstraintDescription must name the fix (keep the JSON in SSM or Secrets Manager)")
	}
	// Longest values: a generated table name and queue URL, the grants with
	// a 200-character ARN and prefix, an emulator endpoint.
	longest := map[string]int{
		"HOOKLEDGER_TABLE": 255, "HOOKLEDGER_RETENTION": 8, "HOOKLEDGER_SHARDS": 4, "HOOKLEDGER_RECLAIM_AFTER": 8,
		"LOG_LEVEL": 5, "HOOKLEDGER_STAGE": 16, "AWS_ENDPOINT_URL": 64, "HOOKLEDGER_QUEUE_URL": 160,
		"HOOKLEDGER_SOURCES": maxLen, "HOOKLEDGER_MAX_BODY": 7, "HOOKLEDGER_MISMATCH": 6,
		"HOOKLEDGER_PAYLOAD": 10, "HOOKLEDGER_PAYLOAD_BUCKET": 63, "HOOKLEDGER_PAYLOAD_STORE_ABOVE": 7, "HOOKLEDGER_PAYLOAD_STORE_DAYS": 5,
		"HOOKLEDGER_SECRET_GRANTS": len("ssm=;secretsmanager=;secretsmanager_prefix=") + 128 + 200 + 100,
	}
	total := 0
	for _, vars := range []*yaml.Node{get(tp.root, "Globals", "Function", "Environment", "Variables"),
		get(tp.resource("ReceiverFunction"), "Properties", "Environment", "Variables")} {
		for i := 0; i+1 < len(vars.Content); i += 2 {
			name := vars.Content[i].Value
			n, ok := longest[name]
			if !ok {
				t.Errorf("receiver variable %s has no longest value in this test; add one", name)
			}
			total += len(name) + n
		}
	}
	if total > 4096 {
		t.Errorf("receiver environment can reach %d bytes, over Lambda's 4096: lower SourcesConfig's MaxLength", total)
	}
}

// A reserved concurrency of 1 cannot be deployed on an account whose
// concurrency quota is 10 (Lambda keeps 10 unreserved): the default must
// reserve nothing.
func TestReclaimerReservesNoConcurrencyByDefault(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	rce := get(tp.resource("ReclaimerFunction"), "Properties", "ReservedConcurrentExecutions")
	if rce == nil {
		return
	}
	if rce.Kind == yaml.ScalarNode {
		t.Fatalf("ReservedConcurrentExecutions is fixed at %s; make it a parameter whose default reserves none", rce.Value)
	}
	if p := get(tp.root, "Parameters", "ReclaimerReservedConcurrency", "Default"); p == nil || p.Value != "0" {
		t.Errorf("ReclaimerReservedConcurrency default %v, want 0", p)
	}
	if rce.Tag != "!If" || len(rce.Content) != 3 || rce.Content[2].Value != "AWS::NoValue" {
		t.Errorf("ReservedConcurrentExecutions must be !If [reserved?, value, AWS::NoValue]")
	}
}

// The body limit cannot exceed what Lambda can receive (the receiver's own
// check agrees, and refuses more than the ledger can hold when there is no
// payload store).
func TestMaxBodyParameterIsCapped(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	if v := get(tp.root, "Parameters", "MaxBodyBytes", "MaxValue"); v == nil || v.Value != strconv.Itoa(config.MaxBodyWithStore) {
		t.Errorf("MaxBodyBytes MaxValue %v, want %d (config.MaxBodyWithStore)", v, config.MaxBodyWithStore)
	}
}

// The queue takes the 1 MiB messages internal/queue sends.
func TestQueueTakesTheLargestMessages(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	for _, q := range []string{"Queue", "DeadLetterQueue"} {
		if v := get(tp.resource(q), "Properties", "MaximumMessageSize"); v == nil || v.Value != strconv.Itoa(queue.MaxMessageBytes) {
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
	if v := get(b, "Condition"); v == nil || v.Value != "HasPayloadStore" {
		t.Error("PayloadBucket must exist only with PayloadStore=s3")
	}
	if v := get(b, "Properties", "BucketEncryption", "ServerSideEncryptionConfiguration"); v == nil {
		t.Error("PayloadBucket has no default encryption")
	}
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if v := get(b, "Properties", "PublicAccessBlockConfiguration", k); v == nil || v.Value != "true" {
			t.Errorf("PayloadBucket %s is not true", k)
		}
	}
	if v := get(b, "Properties", "OwnershipControls", "Rules"); v == nil || get(v.Content[0], "ObjectOwnership").Value != "BucketOwnerEnforced" {
		t.Error("PayloadBucket must enforce bucket-owner ownership")
	}
	rules := get(b, "Properties", "LifecycleConfiguration", "Rules")
	if rules == nil || get(rules.Content[0], "ExpirationInDays") == nil || get(rules.Content[0], "Prefix").Value != config.DefaultPayloadPrefix {
		t.Error("PayloadBucket objects under the payloads prefix must expire")
	}
	pol := get(tp.resource("PayloadBucketPolicy"), "Properties", "PolicyDocument", "Statement")
	if pol == nil || get(pol.Content[0], "Effect").Value != "Deny" || get(pol.Content[0], "Condition", "Bool", "aws:SecureTransport") == nil {
		t.Error("PayloadBucketPolicy must deny requests without TLS")
	}
	want := map[string]string{"ReceiverRole": "s3:PutObject", "ProcessorRole": "s3:GetObject", "ReclaimerRole": "s3:GetObject"}
	for role, action := range want {
		found := false
		for _, p := range get(tp.resource(role), "Properties", "Policies").Content {
			if p.Tag != "!If" || len(p.Content) < 2 || p.Content[0].Value != "HasPayloadStore" {
				continue
			}
			st := get(p.Content[1], "PolicyDocument", "Statement").Content[0]
			if a := get(st, "Action"); a == nil || a.Value != action {
				t.Errorf("%s payload store grant: action %v, want only %s", role, a, action)
			}
			if r := get(st, "Resource"); r == nil || !strings.HasSuffix(r.Value, "/"+config.DefaultPayloadPrefix+"*") {
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
// the receiver's Unavailable and SecretUnavailable counts and each front
// door's 5xx.
func TestServerSideFailuresAreAlarmed(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	want := map[string]bool{"hookledger/Unavailable": false, "hookledger/SecretUnavailable": false, "AWS/ApiGateway/5xx": false, "AWS/Lambda/Url5xxCount": false}
	res := get(tp.root, "Resources")
	for i := 0; i+1 < len(res.Content); i += 2 {
		r := res.Content[i+1]
		if get(r, "Type").Value != "AWS::CloudWatch::Alarm" {
			continue
		}
		key := get(r, "Properties", "Namespace").Value + "/" + get(r, "Properties", "MetricName").Value
		if _, ok := want[key]; ok {
			want[key] = true
		}
	}
	for k, found := range want {
		if !found {
			t.Errorf("no alarm on %s", k)
		}
	}
}

// The Secrets Manager grant matches an exact ARN given without the random
// suffix: the policy lists both the ARN and ARN-??????.
func TestSecretsManagerGrantCoversTheSuffix(t *testing.T) {
	t.Parallel()
	tp := loadTemplate(t)
	policies := get(tp.resource("ReceiverRole"), "Properties", "Policies")
	found := false
	for _, p := range policies.Content {
		if p.Tag != "!If" || len(p.Content) < 2 || p.Content[0].Value != "HasSecretsManagerSecret" {
			continue
		}
		res := get(p.Content[1], "PolicyDocument", "Statement").Content[0]
		list := get(res, "Resource")
		if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) != 2 || !strings.HasSuffix(list.Content[1].Value, "-??????") {
			t.Errorf("SecretsManagerSecretArn grant must list the ARN and ARN-??????")
		}
		found = true
	}
	if !found {
		t.Error("no SecretsManagerSecretArn grant in ReceiverRole")
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
	if d := get(tp.root, "Parameters", "FrontDoor", "Default"); d == nil || d.Value != "HttpApi" {
		t.Errorf("FrontDoor default %v, want HttpApi", d)
	}
	cond := func(name string) string {
		if c := get(tp.resource(name), "Condition"); c != nil {
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
	if v := get(url, "Properties", "AuthType"); v == nil || v.Value != "NONE" {
		t.Errorf("function URL AuthType %v, want NONE (senders cannot sign AWS requests)", v)
	}
	prop := func(res, key string) string {
		if v := get(tp.resource(res), "Properties", key); v != nil {
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
		o := get(tp.root, "Outputs", out)
		if o == nil {
			t.Errorf("no output %s", out)
			continue
		}
		if c := get(o, "Condition"); (c == nil && want != "") || (c != nil && c.Value != want) {
			t.Errorf("output %s condition %v, want %q", out, c, want)
		}
	}
	rce := get(tp.resource("ReceiverFunction"), "Properties", "ReservedConcurrentExecutions")
	if rce == nil || rce.Tag != "!If" || len(rce.Content) != 3 || rce.Content[0].Value != "HasReceiverReservation" || rce.Content[2].Value != "AWS::NoValue" {
		t.Error("the receiver's ReservedConcurrentExecutions must be !If [HasReceiverReservation, ReceiverReservedConcurrency, AWS::NoValue]")
	}
	if d := get(tp.root, "Parameters", "ReceiverReservedConcurrency", "Default"); d == nil || d.Value != "0" {
		t.Errorf("ReceiverReservedConcurrency default %v, want 0 (accounts with a quota of 10 cannot reserve)", d)
	}
}

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

// grantsOf reads a samconfig.toml section's secret grants.
func grantsOf(t *testing.T, section string) source.Grants {
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
	var g source.Grants
	for _, m := range regexp.MustCompile(`"(SecretsParameterPath|SecretsManagerPrefix|SecretsManagerSecretArn)=([^"]*)"`).FindAllStringSubmatch(after, -1) {
		switch m[1] {
		case "SecretsParameterPath":
			g.SSMPath = m[2]
		case "SecretsManagerPrefix":
			g.SecretsManagerPrefix = m[2]
		case "SecretsManagerSecretArn":
			g.SecretsManagerARN = m[2]
		}
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
		t.Fatalf("samconfig.toml [prod] grants %+v; the docs' examples need an SSM path and a Secrets Manager prefix", prod)
	}
	total := 0
	for _, doc := range []string{"README.md", "docs/deploy.md", "docs/providers.md"} {
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

// make e2e deploys with the dev section's grants and stores its secrets under
// them; the dev and default sections must grant both stores.
func TestSamconfigSectionsGrantBothStores(t *testing.T) {
	t.Parallel()
	for _, section := range []string{"default", "dev", "prod"} {
		g := grantsOf(t, section)
		if g.SSMPath == "" || g.SecretsManagerPrefix == "" || !strings.Contains(g.SSMPath, section) && section != "default" {
			t.Errorf("[%s] grants %+v; want SecretsParameterPath=/hookledger/%s and SecretsManagerPrefix=hookledger/%s/", section, g, section, section)
		}
	}
}
