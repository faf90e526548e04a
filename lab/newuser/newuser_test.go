package newuser

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// maxTouched is what the template promises: the effect, its test, and one
// declared place outside effect/ for deployment (samconfig.toml).
const maxTouched = 3

// effectPkg is the user's package; module is the template's.
const (
	module    = "github.com/hookledger/hookledger"
	effectPkg = module + "/effect"
)

// TestNewUser makes a new user's change and then a team's in one scratch
// copy of the repository (one copy: the second reuses the first's builds).
func TestNewUser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a copy of the repository; not in -short")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	copyTree(t, root, dir)
	t.Run("TouchesAtMostThreeFiles", func(t *testing.T) { touchesAtMostThreeFiles(t, dir) })
	t.Run("TeamEffect", func(t *testing.T) { teamEffect(t, dir) })
	lint(t, root, dir)
}

// touchesAtMostThreeFiles starts from the sample as the template ships it
// (not from what effect/ holds now), replaces it with the new user's
// effect and setting, and counts the files the change touched.
func touchesAtMostThreeFiles(t *testing.T, dir string) {
	setEffect(t, dir, "testdata/sample")
	run(t, dir, "git", "init", "-q")
	run(t, dir, "git", "add", "-A")
	run(t, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "clone")

	setEffect(t, dir, "testdata/newuser")
	setSettings(t, dir, `{\"INVENTORY_URL\":\"https://inventory.example.com\"}`)
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
}

// teamEffect replaces effect/ with a team's effect (several files, a
// sub-package, testdata, settings of its own) and runs the checks of
// `make test` that such a change can reach: vet and build of everything,
// and the tests of every package that links effect/, and of the template
// (samconfig.toml changed).
func teamEffect(t *testing.T, dir string) {
	setEffect(t, dir, "testdata/team")
	setSettings(t, dir, `{\"SHOP_URL\":\"https://shop.example.com\",\"MAILER_URL\":\"https://mail.example.com\",\"BILLING_URL\":\"https://billing.example.com\"}`)
	start := time.Now()
	run(t, dir, goTool(), "vet", "./...", "./lab/...")
	run(t, dir, goTool(), "build", "./...", "./lab/...")
	pkgs := linkingEffect(t, dir)
	for _, p := range pkgs {
		if strings.HasPrefix(p, module+"/lab/") {
			t.Errorf("%s links effect/: the proof lab runs its own sample (lab/effect), never the user's", p)
		}
	}
	run(t, dir, goTool(), append([]string{"test", "-count=1", "."}, pkgs...)...)
	t.Logf("vet, build and the tests of %v in %.1fs", pkgs, time.Since(start).Seconds())
}

// linkingEffect lists the packages whose test binaries link effect/ or a
// package under it.
func linkingEffect(t *testing.T, dir string) []string {
	t.Helper()
	out := run(t, dir, goTool(), "list", "-test", "-f", `{{.ImportPath}}|{{join .Deps ","}}`, "./...", "./lab/...")
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		ip, deps, _ := strings.Cut(line, "|")
		if !strings.HasSuffix(ip, ".test") {
			continue // a package or its test variant; the test binary lists them all
		}
		for _, d := range strings.Split(deps, ",") {
			d, _, _ = strings.Cut(d, " ") // "pkg [pkg.test]"
			if d == effectPkg || strings.HasPrefix(d, effectPkg+"/") {
				pkgs = append(pkgs, strings.TrimSuffix(ip, ".test"))
				break
			}
		}
	}
	if !slices.Contains(pkgs, effectPkg) {
		t.Fatalf("no test binary links %s; go list said:\n%s", effectPkg, out)
	}
	return pkgs
}

// lint runs the template lint on the copy, when its tools are installed.
func lint(t *testing.T, root, dir string) {
	t.Helper()
	bin := filepath.Join(root, ".venv", "sam", "bin", "cfn-lint")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("HOOKLEDGER_REQUIRE_EMULATOR") == "1" {
			t.Fatalf("the template lint tools are missing (%v): make test installs them (scripts/tools.sh)", err)
		}
		t.Skip("the template lint tools are not installed; `make test` installs them (scripts/tools.sh)")
	}
	if err := os.Symlink(filepath.Join(root, ".venv"), filepath.Join(dir, ".venv")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	run(t, dir, "bash", "scripts/lint.sh")
	t.Logf("template lint in %.1fs", time.Since(start).Seconds())
}

// setEffect makes the copy's effect/ hold exactly the tree at from.
func setEffect(t *testing.T, dir, from string) {
	t.Helper()
	effect := filepath.Join(dir, "effect")
	if err := os.RemoveAll(effect); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(effect, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setSettings gives EffectSettings the value obj (a JSON object, quotes
// escaped as in samconfig.toml) in every samconfig.toml environment.
func setSettings(t *testing.T, dir, obj string) {
	t.Helper()
	path := filepath.Join(dir, "samconfig.toml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	setting := regexp.MustCompile(`'EffectSettings="\{[^']*\}"'`)
	if !setting.Match(b) {
		t.Fatalf("samconfig.toml has no EffectSettings line to change:\n%s", b)
	}
	b = setting.ReplaceAllLiteral(b, []byte(`'EffectSettings="`+obj+`"'`))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
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
