//go:build upgrade

package upgrade

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/lab/project"
	"github.com/hookledger/hookledger/version"
)

// upgradeFiles are the files make upgrade may change in a project: the
// module's requirements and the template it writes from the engine's.
var upgradeFiles = []string{"go.mod", "go.sum", "template.yaml"}

// upgradeProject makes a project with sam init from the previous release's
// tree (so it requires that version), builds and tests it, upgrades it to
// this tree with make upgrade from a file module proxy serving both, and
// proves the upgraded project tests clean, names the new version in its
// template.yaml, and kept its own files as they were.
func upgradeProject(t *testing.T, root string, prev release) {
	start := time.Now()
	tmp := t.TempDir()
	modcache := filepath.Join(tmp, "modcache")
	t.Cleanup(func() { // before TempDir's removal: the module cache is read-only
		if _, err := command(tmp, append(os.Environ(), "GOMODCACHE="+modcache), "go", "clean", "-modcache"); err != nil {
			t.Error(err)
		}
	})
	from, to := "v"+prev.Version, served(t, prev.Version)
	proxy := filepath.Join(tmp, "proxy")
	if err := project.AddVersion(proxy, prev.Dir, from); err != nil {
		t.Fatal(err)
	}
	if err := project.AddVersion(proxy, root, to); err != nil {
		t.Fatal(err)
	}
	env, err := project.Env(proxy, modcache)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := project.Init(filepath.Join(root, ".venv", "sam", "bin", "sam"), prev.Dir, tmp, "acme-hooks", nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod := readFile(t, proj, "go.mod"); !strings.Contains(mod, "require "+project.Module+" "+from+"\n") {
		t.Fatalf("sam init at release %s made a project that does not require %s %s:\n%s", prev, project.Module, from, mod)
	}
	runIn(t, proj, env, "make")
	before := fileHashes(t, proj)
	out := runIn(t, proj, env, "make", "upgrade", "VERSION="+to)
	runIn(t, proj, env, "go", "test", "./...")
	if mod := readFile(t, proj, "go.mod"); !strings.Contains(mod, "require "+project.Module+" "+to+"\n") {
		t.Errorf("after make upgrade VERSION=%s, go.mod does not require %s %s:\n%s", to, project.Module, to, mod)
	}
	if head, _, _ := strings.Cut(readFile(t, proj, "template.yaml"), "\n"); !strings.Contains(head, project.Module+" "+to) {
		t.Errorf("template.yaml was not written again from %s %s; its first line: %s", project.Module, to, head)
	}
	same := checkOwnFiles(t, before, fileHashes(t, proj), out)
	fmt.Printf("upgrade: project: sam init at %s, make (vet, test, template) clean; make upgrade VERSION=%s: go.mod and template.yaml at %s, "+
		"%d files of the project's own unchanged; go test ./... clean; %s\n", from, to, to, same, time.Since(start).Round(time.Second))
}

// served is the version this tree is served as: its own, or, when that is
// still the previous release's (an unreleased tree between releases), a
// pre-release of the next patch, which sorts after it.
func served(t *testing.T, prev string) string {
	t.Helper()
	cur, old := parts(version.Version), parts(prev)
	switch slices.Compare(cur, old) {
	case 1:
		return "v" + version.Version
	case 0:
		return fmt.Sprintf("v%d.%d.%d-dev", cur[0], cur[1], cur[2]+1)
	}
	t.Fatalf("this tree is version %s, older than the previous release %s (lab/upgrade/%s)", version.Version, prev, previousFile)
	return ""
}

// parts splits a MAJOR.MINOR.PATCH version into its numbers.
func parts(v string) []int {
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, _ := strconv.Atoi(p)
		out = append(out, n)
	}
	return out
}

// addedRe reads the files hookledger template says it added (new wiring).
var addedRe = regexp.MustCompile(`(?m)^added (\S+): `)

// checkOwnFiles compares the project's files before and after the upgrade:
// only upgradeFiles may change, and only the files the upgrade said it
// added may appear. It returns how many files stayed the same.
func checkOwnFiles(t *testing.T, before, after map[string][32]byte, out string) int {
	t.Helper()
	added := map[string]bool{}
	for _, m := range addedRe.FindAllStringSubmatch(out, -1) {
		added[filepath.ToSlash(m[1])] = true
	}
	same := 0
	for name, h := range before {
		switch a, ok := after[name]; {
		case slices.Contains(upgradeFiles, name):
		case !ok:
			t.Errorf("make upgrade removed the project's %s", name)
		case a != h:
			t.Errorf("make upgrade changed the project's own %s", name)
		default:
			same++
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok && !added[name] && !slices.Contains(upgradeFiles, name) {
			t.Errorf("make upgrade added %s without saying so", name)
		}
	}
	return same
}

// fileHashes hashes every file of the project by its slash path.
func fileHashes(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runIn runs a command in the project with env and returns its output.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatal(err)
	}
	out, err := command(dir, env, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
