//go:build upgrade

// Package upgrade proves that a deployed stack survives an upgrade from
// the previous release to this tree, and a rollback to it, with work in
// flight; and that a project made with sam init at the previous version
// upgrades to this one by its documented command. The previous release is
// the one lab/upgrade/previous names; scripts/test.sh runs this test
// (go test -tags upgrade ./lab/upgrade/) against an emulator with IAM
// enforced, on HOOKLEDGER_E2E_PORT.
package upgrade

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/version"
)

// previousFile names the release before this tree (see its comment).
const previousFile = "previous"

// release is a version of hookledger and the tree it is built from.
type release struct {
	Version string // MAJOR.MINOR.PATCH
	Commit  string // "" for this tree
	Dir     string
}

func (r release) String() string {
	if r.Commit == "" {
		return r.Version + " (this tree)"
	}
	return r.Version + " (" + r.Commit[:12] + ")"
}

// TestUpgrade deploys the previous release, leaves work in flight in every
// state, deploys this tree over it with traffic and crashes going, and
// proves by the stubs' logs that nothing was applied twice or lost and
// that retry budgets held; then the same for a rollback. Beside it, a
// project made with sam init at the previous version is upgraded to this
// one with make upgrade.
func TestUpgrade(t *testing.T) {
	start := time.Now()
	root := repoRoot(t)
	for _, bin := range []string{".venv/sam/bin/sam", ".venv/bin/ministack"} {
		if _, err := os.Stat(filepath.Join(root, bin)); err != nil {
			t.Fatalf("%v: the pinned tools are missing; scripts/tools.sh deploy installs them", err)
		}
	}
	prev := previous(t, root)
	cur := release{Version: version.Version, Dir: root}
	diff, err := command(root, nil, "git", "diff", "--shortstat", prev.Commit)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("upgrade: previous release %s, this tree %s; tracked files changed since: %s\n", prev, cur, cmp.Or(strings.TrimSpace(diff), "none"))
	t.Cleanup(func() { fmt.Printf("upgrade: %s in all\n", time.Since(start).Round(time.Second)) })
	t.Run("project", func(t *testing.T) {
		t.Parallel()
		upgradeProject(t, root, prev)
	})
	t.Run("stack", func(t *testing.T) {
		t.Parallel()
		upgradeStack(t, prev, cur)
	})
}

var (
	semverRe = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)
	commitRe = regexp.MustCompile(`^[0-9a-f]{40}$`)
	// versionRe reads a tree's version/version.go.
	versionRe = regexp.MustCompile(`(?m)^const Version = "([^"]+)"$`)
)

// previous reads previousFile and extracts that release's tree (git
// archive) into a temporary folder, with this tree's tools.
func previous(t *testing.T, root string) release {
	t.Helper()
	b, err := os.ReadFile(previousFile)
	if err != nil {
		t.Fatal(err)
	}
	var fields [][]string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			fields = append(fields, strings.Fields(line))
		}
	}
	if len(fields) != 1 || len(fields[0]) != 2 || !semverRe.MatchString(fields[0][0]) || !commitRe.MatchString(fields[0][1]) {
		t.Fatalf("lab/upgrade/%s: want one line VERSION COMMIT, such as 0.1.0 and the 40-hex commit of tag v0.1.0; got %q", previousFile, fields)
	}
	rel := release{Version: fields[0][0], Commit: fields[0][1], Dir: filepath.Join(t.TempDir(), "previous")}
	if _, err := command(root, nil, "git", "cat-file", "-e", rel.Commit+"^{commit}"); err != nil {
		t.Fatalf("commit %s of release %s is not in this clone (a shallow clone?): run git fetch --unshallow, or git fetch origin tag v%s, and run the test again",
			rel.Commit, rel.Version, rel.Version)
	}
	if err := os.MkdirAll(rel.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := command(root, nil, "sh", "-c", fmt.Sprintf("git archive --format=tar %s | tar -x -C '%s'", rel.Commit, rel.Dir)); err != nil {
		t.Fatalf("extract release %s: %v", rel, err)
	}
	// The tools of this tree (ignored by git), and a repository of the
	// tree's files: the module zip lists them with git, and go build stamps
	// a commit.
	for _, tool := range []string{".venv", ".tools"} {
		if err := os.Symlink(filepath.Join(root, tool), filepath.Join(rel.Dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=upgrade", "-c", "user.email=upgrade@localhost", "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", "release " + rel.Version}} {
		if _, err := command(rel.Dir, nil, "git", args...); err != nil {
			t.Fatal(err)
		}
	}
	checkPrevious(t, rel)
	return rel
}

// checkPrevious refuses a previous release this test cannot drive: a
// version that is not the commit's, or a lab effect without the InOrder
// route the ordered case needs.
func checkPrevious(t *testing.T, rel release) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rel.Dir, "version", "version.go"))
	if err != nil {
		t.Fatalf("release %s has no version/version.go: %v", rel, err)
	}
	if m := versionRe.FindSubmatch(b); m == nil || string(m[1]) != rel.Version {
		t.Fatalf("lab/upgrade/%s says %s, but commit %s is version %q (version/version.go): give the commit of tag v%s",
			previousFile, rel.Version, rel.Commit, m, rel.Version)
	}
	b, err = os.ReadFile(filepath.Join(rel.Dir, "lab", "effect", "effect.go"))
	if err != nil || !bytes.Contains(b, []byte("hookledger.InOrder(")) {
		t.Fatalf("release %s's lab effect (lab/effect/effect.go) has no InOrder route: the ordered case needs one (err: %v)", rel, err)
	}
}

// command runs name with args in dir (env nil: this process's) and returns
// its combined output; an error carries the output's tail.
func command(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s in %s: %w\n%s", name, strings.Join(args, " "), dir, err, tail(out.String(), 40))
	}
	return out.String(), nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// repoRoot is the repository's root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "template.yaml")); err != nil {
		t.Fatalf("the repository root (with template.yaml) is not two levels up: %v", err)
	}
	return root
}
