package project

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// Module is the module path the template's projects require.
const Module = "github.com/hookledger/hookledger"

// AddVersion adds the module in src, as the files git lists there (tracked
// and new, not ignored: what a clone of the working tree holds), to the
// file module proxy at proxy as version v. The zip leaves out what a real
// one does: nested modules (lab/, idempotency/, the project template),
// symbolic links.
func AddVersion(proxy, src, v string) error {
	out, err := git(src, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	var files []modzip.File
	for _, f := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		if st, err := os.Lstat(filepath.Join(src, f)); err == nil && st.Mode().IsRegular() {
			files = append(files, file{root: src, path: filepath.ToSlash(f)})
		}
	}
	dir := filepath.Join(proxy, Module, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, module.Version{Path: Module, Version: v}, files); err != nil {
		return fmt.Errorf("module zip of %s: %w", src, err)
	}
	mod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	info, _ := json.Marshal(map[string]any{"Version": v, "Time": time.Now().UTC()})
	list, _ := os.ReadFile(filepath.Join(dir, "list"))
	for name, b := range map[string][]byte{v + ".zip": zip.Bytes(), v + ".mod": mod, v + ".info": info, "list": append(list, v+"\n"...)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// file is one file of a module zip, read from the tree at root.
type file struct{ root, path string }

func (f file) Path() string                 { return f.path }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(filepath.Join(f.root, f.path)) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.root, f.path)) }

// Env is the environment for the go commands of a project that requires
// the module from the file proxy at proxy: modules from there first, then
// from this machine's module cache (offline, and already verified), then
// the Go module proxy; a module cache of its own at modcache, so that no
// earlier build of the same version lingers. Remove modcache with
// `go clean -modcache` (its files are read-only, as in a real one).
// -trimpath keeps the build cache's entries of the dependencies the same
// whatever the module cache's path, so they are compiled once, not per run.
func Env(proxy, modcache string) ([]string, error) {
	shared, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	cache := filepath.Join(strings.TrimSpace(string(shared)), "cache", "download")
	return append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(cache)+",https://proxy.golang.org",
		"GOMODCACHE="+modcache,
		"GOSUMDB=off", // modules come from the proxy above or the local cache, which verified them
		"GOFLAGS=-trimpath -buildvcs=false",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	), nil
}

// Init runs sam init with the cookiecutter template at location (a local
// folder or a repository URL) into out, without questions; extra sets the
// template's variables (cookiecutter.json), such as _hookledger_version.
// It returns the project's folder.
func Init(sam, location, out, name string, extra map[string]string) (string, error) {
	args := []string{"init", "--location", location, "--no-input", "--name", name, "--output-dir", out}
	if len(extra) > 0 {
		b, _ := json.Marshal(extra)
		args = append(args, "--extra-context", string(b))
	}
	cmd := exec.Command(sam, args...)
	cmd.Env = append(os.Environ(), "SAM_CLI_TELEMETRY=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("sam %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	dir := filepath.Join(out, name)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("sam init made no project at %s: %w", dir, err)
	}
	return dir, nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return string(out), nil
}
