package newuser

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// maxTouched is what the template promises: the effect, its test, and one
// declared place outside effect/ for deployment (samconfig.toml).
const maxTouched = 3

// TestNewUserTouchesAtMostThreeFiles makes a new user's change in a scratch
// copy of the repository and checks it.
func TestNewUserTouchesAtMostThreeFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and lints a copy of the repository; not in -short")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	copyTree(t, root, dir)
	run(t, dir, "git", "init", "-q")
	run(t, dir, "git", "add", "-A")
	run(t, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "clone")

	// The change: replace the sample effect with the new one, and give its
	// setting a value in every samconfig.toml environment.
	effect := filepath.Join(dir, "effect")
	entries, err := os.ReadDir(effect)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(effect, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(effect, "effect.go"), read(t, "testdata/effect.go.txt"))
	write(t, filepath.Join(effect, "effect_test.go"), read(t, "testdata/effect_test.go.txt"))
	samconfig := filepath.Join(dir, "samconfig.toml")
	conf := read(t, samconfig)
	setting := regexp.MustCompile(`'EffectSettings="\{[^']*\}"'`)
	if n := len(setting.FindAllString(conf, -1)); n == 0 {
		t.Fatalf("samconfig.toml has no EffectSettings line to change:\n%s", conf)
	}
	conf = setting.ReplaceAllString(conf, `'EffectSettings="{\"INVENTORY_URL\":\"https://inventory.example.com\"}"'`)
	write(t, samconfig, conf)

	run(t, dir, "git", "add", "-A")
	touched := strings.Fields(run(t, dir, "git", "diff", "--cached", "--name-only"))
	if len(touched) > maxTouched {
		t.Errorf("the new effect touched %d files, over %d: %v", len(touched), maxTouched, touched)
	}
	for _, f := range touched {
		if !strings.HasPrefix(f, "effect/") && f != "samconfig.toml" {
			t.Errorf("the new effect touched %s, outside effect/ and samconfig.toml", f)
		}
	}
	t.Logf("files touched: %v", touched)

	start := time.Now()
	run(t, dir, goTool(), "build", "./...", "./lab/...")
	run(t, dir, goTool(), "vet", "./...", "./lab/...")
	run(t, dir, goTool(), "test", "-count=1", "./effect/", ".")
	t.Logf("build, vet and the effect's and template's tests in %.1fs", time.Since(start).Seconds())

	lint := filepath.Join(root, ".venv", "sam", "bin", "cfn-lint")
	if _, err := os.Stat(lint); err != nil {
		if os.Getenv("HOOKLEDGER_REQUIRE_EMULATOR") == "1" {
			t.Fatalf("the template lint tools are missing (%v): make test installs them (scripts/tools.sh)", err)
		}
		t.Skip("the template lint tools are not installed; `make test` installs them (scripts/tools.sh)")
	}
	if err := os.Symlink(filepath.Join(root, ".venv"), filepath.Join(dir, ".venv")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	run(t, dir, "bash", "scripts/lint.sh")
	t.Logf("template lint in %.1fs", time.Since(start).Seconds())
}

// repoRoot is the template's root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("the repository root (with go.work) is not two levels up: %v", err)
	}
	return root
}

// copyTree copies the files git knows of (tracked and new, not ignored), as
// a clone holds them.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	list := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	list.Dir = from
	out, err := list.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(from, f)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(to, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goTool is the go command running this test (go test puts it first on
// PATH), or GOROOT's.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}
