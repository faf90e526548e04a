//go:build upgrade

package upgrade

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/hookledger/hookledger/ledger"
)

// Settings every deploy gets, on top of lab/scripts/e2e.sh's own.
const (
	// maxAttempts is HOOKLEDGER_MAX_ATTEMPTS: an always-failing event is
	// dead after 3 handler failures, within minutes.
	maxAttempts = 3
	// effectTimeout is EffectTimeoutSeconds: the queue's visibility timeout
	// is six times it, 60 s, so a failed or crashed delivery comes back
	// within a minute.
	effectTimeout = "10"
	// stackName is the stack every deploy updates.
	stackName = "hookledger-upgrade"
	// portDefault is HOOKLEDGER_E2E_PORT's default, as lab/scripts/e2e.sh has it.
	portDefault = 4577
)

// params is HOOKLEDGER_E2E_PARAMS for every deploy: the timers above; the
// reclaimer looks at records 5 s after they are due.
func params() string {
	b, _ := json.Marshal(map[string]string{
		"EffectTimeoutSeconds": effectTimeout,
		"PipelineSettings":     fmt.Sprintf(`{"HOOKLEDGER_RECLAIM_AFTER":"5s","HOOKLEDGER_MAX_ATTEMPTS":"%d","LOG_LEVEL":"info"}`, maxAttempts),
	})
	return string(b)
}

// stack is the deployed stack and the clients that reach it.
type stack struct {
	root     string // this tree: its scripts start the emulator and delete the stack
	port     int
	endpoint string
	payments int               // the payments stub's port, where the stack's effect calls
	logs     string            // deploy logs, kept after the test
	out      map[string]string // HOOKLEDGER_E2E_* of the last deploy
	deploys  int

	lam    *lambda.Client
	sqs    *sqs.Client
	eb     *eventbridge.Client
	ledger *ledger.Ledger
}

// newStack starts the emulator (or uses the IAM-enforcing one on the
// port) and builds the clients; the test's cleanup deletes the stack and
// stops an emulator it started, unless HOOKLEDGER_E2E_KEEP=1.
func newStack(t *testing.T, root string) *stack {
	t.Helper()
	s := &stack{root: root, port: envInt(t, "HOOKLEDGER_E2E_PORT", portDefault)}
	s.payments = envInt(t, "HOOKLEDGER_E2E_PAYMENTS_PORT", s.port+1000)
	s.endpoint = fmt.Sprintf("http://localhost:%d", s.port)
	s.logs = filepath.Join(root, ".ministack", fmt.Sprintf("upgrade-%d", s.port))
	if err := os.MkdirAll(s.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := os.Getenv("HOOKLEDGER_E2E_KEEP") == "1"
	out, err := s.script(fmt.Sprintf(`stack_emulator "$PWD" %d '%s/emulator.log'; echo "pid=$stack_emulator_pid"`, s.port, s.logs))
	if err != nil {
		t.Fatal(err)
	}
	if pid := strings.TrimPrefix(lastLine(out), "pid="); pid != "" && !keep {
		t.Cleanup(func() {
			if _, err := s.script("stack_stop " + pid); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(func() {
		if keep {
			fmt.Printf("upgrade: HOOKLEDGER_E2E_KEEP=1: stack %s left on %s\n", stackName, s.endpoint)
			return
		}
		if _, err := s.script(fmt.Sprintf("stack_delete \"$PWD\" %s '%s/delete'", stackName, s.logs)); err != nil {
			t.Error(err)
		}
	})
	cfg := s.config()
	s.lam, s.sqs, s.eb = lambda.NewFromConfig(cfg), sqs.NewFromConfig(cfg), eventbridge.NewFromConfig(cfg)
	return s
}

// config is the emulator's, as its root user: nothing here reaches AWS.
func (s *stack) config() aws.Config {
	return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(s.endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "upgrade-test"}, nil
		})}
}

// env is this process's environment for a command that calls the
// emulator, as its root user.
func (s *stack) env(extra ...string) []string {
	return append(os.Environ(), append([]string{"AWS_ENDPOINT_URL=" + s.endpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1"}, extra...)...)
}

// script runs bash with this tree's scripts/local.sh sourced and the
// emulator's AWS environment set, in this tree.
func (s *stack) script(body string) (string, error) {
	return command(s.root, nil, "bash", "-c", fmt.Sprintf("set -euo pipefail; source scripts/local.sh; stack_env %s; %s", s.endpoint, body))
}

// deploy deploys rel's template and code (with rel's lab processor,
// crash points built in) with rel's own lab/scripts/e2e.sh, as a
// CloudFormation update when the stack exists, and reads its outputs.
func (s *stack) deploy(t *testing.T, rel release) time.Duration {
	t.Helper()
	start := time.Now()
	s.deploys++
	dump := filepath.Join(s.logs, fmt.Sprintf("outputs-%d.env", s.deploys))
	log := filepath.Join(s.logs, fmt.Sprintf("deploy-%d-%s.log", s.deploys, rel.Version))
	env := append(os.Environ(), "HOOKLEDGER_E2E_PORT="+strconv.Itoa(s.port), "HOOKLEDGER_E2E_STACK="+stackName,
		"HOOKLEDGER_E2E_KEEP=1", "HOOKLEDGER_E2E_TAGS=crashpoints", "HOOKLEDGER_E2E_PARAMS="+params(),
		"HOOKLEDGER_E2E_PAYMENTS_PORT="+strconv.Itoa(s.payments),
		// No payments stub from the script: the test serves it, on this port, for every deploy.
		fmt.Sprintf("HOOKLEDGER_E2E_RUN=env | grep '^HOOKLEDGER_E2E_' > '%s'", dump))
	out, err := command(rel.Dir, env, "bash", "lab/scripts/e2e.sh")
	os.WriteFile(log, []byte(out), 0o644)
	if err != nil {
		t.Fatalf("deploy of release %s failed (log %s): %v", rel, log, err)
	}
	s.out = readEnv(t, dump)
	for _, k := range []string{"TABLE", "QUEUE_URL", "DLQ_URL", "PROCESSOR", "WEBHOOK_URL", "SECRET"} {
		if s.out[k] == "" {
			t.Fatalf("deploy of release %s: lab/scripts/e2e.sh gave no HOOKLEDGER_E2E_%s (%s)", rel, k, dump)
		}
	}
	if s.ledger, err = ledger.New(dynamodb.NewFromConfig(s.config()), ledger.Options{Table: s.out["TABLE"]}); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// readEnv reads the HOOKLEDGER_E2E_* lines the deploy's command dumped,
// without the prefix.
func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			out[strings.TrimPrefix(k, "HOOKLEDGER_E2E_")] = v
		}
	}
	return out
}

// consume turns the processor's event source mapping on or off.
func (s *stack) consume(t *testing.T, on bool) {
	t.Helper()
	fn := s.out["PROCESSOR"]
	out, err := s.lam.ListEventSourceMappings(t.Context(), &lambda.ListEventSourceMappingsInput{FunctionName: &fn})
	if err != nil || len(out.EventSourceMappings) == 0 {
		t.Fatalf("the event source mappings of %s: %v (%d found)", fn, err, len(out.EventSourceMappings))
	}
	for _, m := range out.EventSourceMappings {
		if _, err := s.lam.UpdateEventSourceMapping(t.Context(), &lambda.UpdateEventSourceMappingInput{UUID: m.UUID, Enabled: &on}); err != nil {
			t.Fatalf("event source mapping of %s on=%v: %v", fn, on, err)
		}
	}
}

// reclaim turns the reclaimer's schedule on or off: the rules that
// target the reclaimer function (the template names it STACK-reclaimer).
func (s *stack) reclaim(t *testing.T, on bool) {
	t.Helper()
	fn, err := s.lam.GetFunctionConfiguration(t.Context(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(stackName + "-reclaimer")})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := s.eb.ListRuleNamesByTarget(t.Context(), &eventbridge.ListRuleNamesByTargetInput{TargetArn: fn.FunctionArn})
	if err != nil || len(rules.RuleNames) == 0 {
		t.Fatalf("the reclaimer's schedule (a rule targeting %s): %v", aws.ToString(fn.FunctionArn), err)
	}
	for _, rule := range rules.RuleNames {
		s.ruleState(t, rule, on)
	}
}

func (s *stack) ruleState(t *testing.T, rule string, on bool) {
	t.Helper()
	var err error
	if on {
		_, err = s.eb.EnableRule(t.Context(), &eventbridge.EnableRuleInput{Name: &rule})
	} else {
		_, err = s.eb.DisableRule(t.Context(), &eventbridge.DisableRuleInput{Name: &rule})
	}
	if err != nil {
		t.Fatalf("reclaimer schedule %s on=%v: %v", rule, on, err)
	}
}

// depth is how many messages a queue holds, visible and in flight.
func (s *stack) depth(ctx context.Context, url string) (int, error) {
	out, err := s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range out.Attributes {
		c, _ := strconv.Atoi(v)
		n += c
	}
	return n, nil
}

// secret reads the stripe/acme signing secret as lab/scripts/e2e.sh
// stored it last (HOOKLEDGER_E2E_SSM_REF).
func (s *stack) secret(ctx context.Context) (string, error) {
	name, ok := strings.CutPrefix(s.out["SSM_REF"], "ssm:")
	if !ok {
		return "", fmt.Errorf("HOOKLEDGER_E2E_SSM_REF %q is not an ssm: reference", s.out["SSM_REF"])
	}
	out, err := ssm.NewFromConfig(s.config()).GetParameter(ctx, &ssm.GetParameterInput{Name: &name, WithDecryption: aws.Bool(true)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.Parameter.Value), nil
}

// refusal invokes the processor with an empty batch and returns the error
// it answers with, "" when it runs: a release that refuses the table (a
// newer record format) fails at cold start, so every invocation fails.
func (s *stack) refusal(t *testing.T) string {
	t.Helper()
	fn := s.out["PROCESSOR"]
	out, err := s.lam.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: &fn, Payload: []byte(`{"Records":[]}`)})
	if err != nil {
		return err.Error()
	}
	if out.FunctionError != nil {
		return aws.ToString(out.FunctionError) + ": " + string(out.Payload)
	}
	return ""
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		t.Fatalf("%s=%q: want a port number", name, v)
	}
	return n
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
