package project

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Engine is the module path of hookledger, which projects require.
const Engine = "github.com/hookledger/hookledger"

// Module is a module as `go list -m -json` reports it.
type Module struct {
	Path    string
	Version string
	Dir     string
	Main    bool
	Replace *Module
}

// Label names the module's version for people: "v0.1.0", or with its
// replacement, "v0.1.0 => ../hookledger".
func (m Module) Label() string {
	v := m.Version
	if m.Main {
		v = "(this repository)"
	}
	if r := m.Replace; r != nil {
		v += " => " + strings.TrimSpace(r.Path+" "+r.Version)
	}
	return v
}

// Go runs the go command in dir and returns its standard output; an error
// carries what it printed on standard error.
func Go(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Locate returns the main module of dir (the project, or this repository)
// and the engine module it requires, downloaded: its Dir holds the
// engine's template.yaml, scripts and CHANGELOG.md at that version.
func Locate(ctx context.Context, dir string) (proj, engine Module, err error) {
	if proj, err = mainModule(ctx, dir); err != nil {
		return proj, engine, err
	}
	if proj.Path == Engine {
		return proj, proj, nil
	}
	if engine, err = list(ctx, dir, Engine); err != nil {
		return proj, engine, fmt.Errorf("%s does not require %s: %w", proj.Path, Engine, err)
	}
	if engine.Dir == "" {
		if _, err := Go(ctx, dir, "mod", "download", Engine); err != nil {
			return proj, engine, err
		}
		if engine, err = list(ctx, dir, Engine); err != nil {
			return proj, engine, err
		}
	}
	if engine.Dir == "" {
		return proj, engine, fmt.Errorf("go list found no folder for %s %s", Engine, engine.Label())
	}
	return proj, engine, nil
}

// mainModule is the module whose go.mod governs dir (go env GOMOD), also
// in a workspace, where go list -m lists every module of it.
func mainModule(ctx context.Context, dir string) (Module, error) {
	out, err := Go(ctx, dir, "env", "GOMOD")
	gomod := strings.TrimSpace(string(out))
	if err == nil && (gomod == "" || gomod == os.DevNull) {
		err = errors.New("no go.mod here or above")
	}
	if err != nil {
		return Module{}, fmt.Errorf("%s: %w; run it in your project, the folder with go.mod (start one with sam init --location and hookledger's repository)", dir, err)
	}
	out, err = Go(ctx, dir, "mod", "edit", "-json", gomod)
	if err != nil {
		return Module{}, err
	}
	var mod struct{ Module struct{ Path string } }
	if err := json.Unmarshal(out, &mod); err != nil {
		return Module{}, fmt.Errorf("go mod edit -json %s: %w", gomod, err)
	}
	return Module{Path: mod.Module.Path, Dir: filepath.Dir(gomod), Main: true}, nil
}

func list(ctx context.Context, dir, mod string) (Module, error) {
	var m Module
	out, err := Go(ctx, dir, "list", "-m", "-json", mod)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return m, fmt.Errorf("go list -m -json: %w", err)
	}
	return m, nil
}
