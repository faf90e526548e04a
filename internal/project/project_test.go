package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// engineDir is the repository's root: the engine, as a project finds it.
const engineDir = "../.."

func newProject(t *testing.T, mains ...string) Module {
	t.Helper()
	dir := t.TempDir()
	for _, m := range mains {
		if err := os.MkdirAll(filepath.Join(dir, m), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, m, "main.go"), []byte("package main\n// mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Module{Path: "example.com/shop", Dir: dir, Main: true}
}

// TestWriteTemplate writes template.yaml with the header, keeps the
// project's mains as they are, and adds the wiring-only main of a function
// the project lacks (as after an upgrade that brings a new one).
func TestWriteTemplate(t *testing.T) {
	t.Parallel()
	p := newProject(t, "functions/processor", "functions/receiver", "functions/reclaimer", "functions/bus")
	engine := Module{Path: Engine, Version: "v0.1.0", Dir: engineDir}
	added, err := WriteTemplate(p, engine)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || added[0] != "functions/reconciler/main.go" {
		t.Errorf("added %v, want [functions/reconciler/main.go]", added)
	}
	got, _ := os.ReadFile(filepath.Join(p.Dir, "functions/reconciler/main.go"))
	want, _ := os.ReadFile(filepath.Join(engineDir, "functions/reconciler/main.go"))
	if string(got) != string(want) {
		t.Errorf("functions/reconciler/main.go is not the engine's:\n%s", got)
	}
	if mine, _ := os.ReadFile(filepath.Join(p.Dir, "functions/processor/main.go")); string(mine) != "package main\n// mine\n" {
		t.Errorf("the project's processor main changed:\n%s", mine)
	}
	tmpl, err := os.ReadFile(filepath.Join(p.Dir, TemplateFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(tmpl), Header(engine)) || !strings.Contains(Header(engine), Engine+" v0.1.0") {
		t.Errorf("template.yaml opens with:\n%.300s", tmpl)
	}
}

// TestWriteTemplateRefuses: without its processor main (which names the
// project's effect package, so it cannot be copied), with a resources.yaml
// that collides, and in the engine's own repository, nothing is written.
func TestWriteTemplateRefuses(t *testing.T) {
	t.Parallel()
	engine := Module{Path: Engine, Version: "v0.1.0", Dir: engineDir}
	noProcessor := newProject(t, "functions/receiver", "functions/reclaimer", "functions/bus", "functions/reconciler")
	collides := newProject(t, "functions/processor", "functions/receiver", "functions/reclaimer", "functions/bus", "functions/reconciler")
	if err := os.WriteFile(filepath.Join(collides.Dir, ResourcesFile), []byte("Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    Module
		want string
	}{
		{"no processor", noProcessor, "add functions/processor/main.go, as the engine's"},
		{"collision", collides, "Resources.Queue is also in the engine's template.yaml"},
		{"engine", engine, "this is hookledger's own repository"},
	} {
		_, err := WriteTemplate(c.p, engine)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		if c.p.Dir != engineDir {
			if _, err := os.Stat(filepath.Join(c.p.Dir, TemplateFile)); err == nil {
				t.Errorf("%s: wrote template.yaml despite the error", c.name)
			}
		}
	}
}
