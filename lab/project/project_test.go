package project

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/version"
)

// portDefault is make local's emulator port when HOOKLEDGER_LOCAL_PORT is
// unset (the CLI's default).
const portDefault = "4588"

// resources is what the test's user adds to the stack: a parameter of
// theirs holding the engine's ledger table name.
const resources = `Resources:
  TableNameParameter:
    Type: AWS::SSM::Parameter
    Properties:
      Type: String
      Value: !Ref LedgerTable
Outputs:
  TableNameParameter:
    Value: !Ref TableNameParameter
`

// TestProject makes a project with sam init from this checkout, requiring
// this checkout as the version the template names; the project vets,
// tests and writes its template.yaml, which lints clean with a resource
// of the user's; make local deploys it with IAM enforced, and a signed
// event is processed by the project's own effect with the user's setting.
func TestProject(t *testing.T) {
	if testing.Short() {
		t.Skip("builds, deploys and drives a generated project; not in -short")
	}
	root := repoRoot(t)
	tools := filepath.Join(root, ".venv")
	sam := filepath.Join(tools, "sam", "bin", "sam")
	for _, bin := range []string{sam, filepath.Join(tools, "sam", "bin", "cfn-lint"), filepath.Join(tools, "bin", "ministack")} {
		if _, err := os.Stat(bin); err != nil {
			if os.Getenv("HOOKLEDGER_REQUIRE_EMULATOR") == "1" {
				t.Fatalf("%v: make test installs the tools (scripts/tools.sh deploy)", err)
			}
			t.Skipf("%v: the pinned tools are not installed; scripts/tools.sh deploy installs them", err)
		}
	}
	tmp := t.TempDir()
	modcache := filepath.Join(tmp, "modcache")
	t.Cleanup(func() { // before TempDir's removal: the module cache is read-only
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = append(os.Environ(), "GOMODCACHE="+modcache)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})
	v := "v" + version.Version
	start := time.Now()
	if err := AddVersion(filepath.Join(tmp, "proxy"), root, v); err != nil {
		t.Fatal(err)
	}
	env, err := Env(filepath.Join(tmp, "proxy"), modcache)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := Init(sam, root, tmp, "acme-hooks", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("module proxy with %s %s and sam init in %.1fs", Module, v, time.Since(start).Seconds())

	gomod := read(t, proj, "go.mod")
	if !strings.Contains(gomod, "require "+Module+" "+v+"\n") {
		t.Fatalf("the project's go.mod does not require %s %s:\n%s", Module, v, gomod)
	}
	if _, err := os.Stat(filepath.Join(proj, "effect", "effect.go")); err != nil {
		t.Fatal("the project has no effect of its own:", err)
	}
	// The pinned tools, as make local would install them into the project.
	if err := os.Symlink(tools, filepath.Join(proj, ".venv")); err != nil {
		t.Fatal(err)
	}
	write(t, proj, "resources.yaml", read(t, proj, "resources.yaml")+resources)
	marker := "hi-" + time.Now().Format("150405.000")
	setGreeting(t, proj, marker)

	start = time.Now()
	run(t, proj, env, "make")
	tmpl := read(t, proj, "template.yaml")
	if !strings.Contains(strings.SplitN(tmpl, "\n", 2)[0], Module+" "+v) {
		t.Errorf("template.yaml's header does not name %s %s:\n%.300s", Module, v, tmpl)
	}
	run(t, proj, env, filepath.Join(tools, "sam", "bin", "cfn-lint"), "--regions", "us-east-1", "--append-rules", "cfn_lint_serverless.rules", "--", "template.yaml")
	t.Logf("go mod tidy, vet, test, template and its lint in %.1fs", time.Since(start).Seconds())

	start = time.Now()
	port := os.Getenv("HOOKLEDGER_LOCAL_PORT")
	if port == "" {
		port = portDefault
	}
	env = append(env, "HOOKLEDGER_LOCAL_PORT="+port)
	t.Cleanup(func() { run(t, proj, env, "go", "tool", "hookledger", "local", "--down") })
	run(t, proj, env, "make", "local")
	t.Logf("make local in %.1fs", time.Since(start).Seconds())
	checkDeployed(t, proj, marker)
}

// checkDeployed reads the deployed stack: the event ended done through the
// project's effect, with the user's setting, and the user's resource holds
// the engine's table name.
func checkDeployed(t *testing.T, proj, marker string) {
	t.Helper()
	var st struct {
		Endpoint string            `json:"endpoint"`
		Outputs  map[string]string `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(read(t, proj, ".aws-sam/local/stack.json")), &st); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": st.Endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_REGION": "us-east-1"} {
		t.Setenv(k, v)
	}
	cfg, err := sdkconfig.Load(t.Context(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	table := st.Outputs["LedgerTableName"]
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), ledger.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.List(t.Context(), ledger.Done, 0)
	if err != nil {
		t.Fatal(err)
	}
	greeted := regexp.MustCompile("^" + regexp.QuoteMeta(marker) + ", cus_[0-9a-f]+ of acme$")
	found, seen := false, []string{}
	for _, r := range recs {
		found = found || r.Source == "stripe" && r.Tenant == "acme" && greeted.MatchString(r.Steps["greet"].Result)
		seen = append(seen, r.Key.String()+": "+r.Steps["greet"].Result)
	}
	if !found {
		t.Errorf("no done stripe/acme record whose greet step says %q; done: %q", greeted, seen)
	}
	p, err := ssm.NewFromConfig(cfg).GetParameter(t.Context(), &ssm.GetParameterInput{Name: ptr(st.Outputs["TableNameParameter"])})
	if err != nil || p.Parameter == nil || *p.Parameter.Value != table {
		t.Errorf("the user's resource TableNameParameter (%q): %v, %+v; want the value %q", st.Outputs["TableNameParameter"], err, p, table)
	}
}

// setGreeting gives the effect's GREETING setting the value v in the
// [local] section of samconfig.toml, as a user edits their settings.
func setGreeting(t *testing.T, proj, v string) {
	t.Helper()
	cfg := read(t, proj, "samconfig.toml")
	local := strings.Index(cfg, "[local.deploy.parameters]")
	const was = `'EffectSettings="{\"GREETING\":\"hello\"}"'`
	at := strings.Index(cfg[max(local, 0):], was)
	if local < 0 || at < 0 {
		t.Fatalf("samconfig.toml has no [local] EffectSettings with GREETING to change:\n%s", cfg)
	}
	at += local
	write(t, proj, "samconfig.toml", cfg[:at]+`'EffectSettings="{\"GREETING\":\"`+v+`\"}"'`+cfg[at+len(was):])
}

func ptr(s string) *string { return &s }

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, dir, name, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// repoRoot is the repository's root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cookiecutter.json")); err != nil {
		t.Fatalf("the repository root (with cookiecutter.json) is not two levels up: %v", err)
	}
	return root
}
