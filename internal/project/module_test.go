package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocate finds the engine: this repository itself, a replacement
// folder, and no project at all (an error that says what to do).
func TestLocate(t *testing.T) {
	t.Setenv("GOWORK", "off")
	t.Setenv("GOFLAGS", "-mod=mod")
	root, err := filepath.Abs(engineDir)
	if err != nil {
		t.Fatal(err)
	}
	proj, engine, err := Locate(t.Context(), ".")
	if err != nil || proj.Path != Engine || proj.Dir != root || engine != proj {
		t.Errorf("in the engine's repository: %+v, %+v, %v; want the repository as both", proj, engine, err)
	}

	dir := t.TempDir()
	gomod := "module example.com/shop\n\ngo 1.26\n\nrequire " + Engine + " v0.1.0\n\nreplace " + Engine + " => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	proj, engine, err = Locate(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if proj.Path != "example.com/shop" || proj.Dir != dir || engine.Dir != root || engine.Version != "v0.1.0" ||
		engine.Label() != "v0.1.0 => "+root {
		t.Errorf("in a project with a replace: %+v, %+v (%s)", proj, engine, engine.Label())
	}

	if _, _, err := Locate(t.Context(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "run it in your project, the folder with go.mod") {
		t.Errorf("outside a project: %v", err)
	}
}
