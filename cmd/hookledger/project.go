package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/project"
	"github.com/hookledger/hookledger/version"
)

// runVersion prints hookledger's version, and the module version the
// binary was built from when that says more (a pseudo-version).
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "version", "version", stderr)
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "version: unexpected argument %q; version takes none\n", fs.Arg(0))
		return 2
	}
	built := ""
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == project.Engine {
		if v := bi.Main.Version; v != "" && v != "(devel)" && v != "v"+version.Version {
			built = ", built from " + v
		}
	}
	fmt.Fprintf(stdout, "hookledger %s (%s %s/%s%s)\n", version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH, built)
	return 0
}

// runTemplate writes a project's template.yaml: the engine's, at the
// version go.mod requires, with the project's resources.yaml.
func runTemplate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "template", "template   (in a project made with sam init: writes template.yaml)", stderr)
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "template: unexpected argument %q; template takes none (it reads go.mod and resources.yaml)\n", fs.Arg(0))
		return 2
	}
	proj, engine, err := project.Locate(ctx, ".")
	if err != nil {
		fmt.Fprintf(stderr, "template: %v\n", err)
		return 1
	}
	if !writeTemplate(proj, engine, stdout, stderr) {
		return 1
	}
	return 0
}

// writeTemplate writes the project's template.yaml and says so.
func writeTemplate(proj, engine project.Module, stdout, stderr io.Writer) bool {
	added, err := project.WriteTemplate(proj, engine)
	for _, f := range added {
		fmt.Fprintf(stdout, "added %s: a function new in %s %s (wiring only)\n", f, project.Engine, engine.Label())
	}
	if err != nil {
		fmt.Fprintf(stderr, "template: %v; template.yaml is unchanged\n", err)
		return false
	}
	fmt.Fprintf(stdout, "wrote %s from %s %s and %s\n", project.TemplateFile, project.Engine, engine.Label(), project.ResourcesFile)
	return true
}

// runUpgrade moves a project to another version of the engine: go get,
// go mod tidy, template.yaml written again, and the changelog between.
func runUpgrade(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "upgrade", "upgrade [VERSION]   (default: this hookledger's own version, "+version.Version+")", stderr)
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	target := "v" + version.Version
	switch fs.NArg() {
	case 0:
	case 1:
		target = "v" + strings.TrimPrefix(fs.Arg(0), "v")
		if project.Compare(target, "v0.0.0") < 0 {
			fmt.Fprintf(stderr, "upgrade: %q is not a version; give one such as v0.2.0 (CHANGELOG.md lists them)\n", fs.Arg(0))
			return 2
		}
	default:
		fmt.Fprintln(stderr, "upgrade: give at most one VERSION, e.g. hookledger upgrade v0.2.0")
		return 2
	}
	proj, old, err := project.Locate(ctx, ".")
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "upgrade: %v\n", err)
		return 1
	case proj.Path == project.Engine:
		fmt.Fprintln(stderr, "upgrade: this is hookledger's own repository; upgrade is for a project made with sam init (here: git pull)")
		return 1
	case old.Replace != nil:
		fmt.Fprintf(stderr, "upgrade: go.mod replaces %s (%s): the replacement, not the version, decides what builds; remove the replace directive first\n", project.Engine, old.Label())
		return 1
	}
	for _, step := range [][]string{{"get", project.Engine + "@" + target}, {"mod", "tidy"}} {
		fmt.Fprintf(stdout, "go %s\n", strings.Join(step, " "))
		if _, err := project.Go(ctx, proj.Dir, step...); err != nil {
			fmt.Fprintf(stderr, "upgrade: %v\n", err)
			return 1
		}
	}
	_, engine, err := project.Locate(ctx, ".")
	if err != nil {
		fmt.Fprintf(stderr, "upgrade: %v\n", err)
		return 1
	}
	if !writeTemplate(proj, engine, stdout, stderr) {
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s -> %s\n", project.Engine, old.Version, engine.Version)
	if log, err := os.ReadFile(filepath.Join(engine.Dir, project.ChangelogFile)); err == nil {
		if c := project.Changes(log, old.Version, engine.Version); c != "" {
			fmt.Fprintf(stdout, "\n%s\n\n", c)
		}
	}
	fmt.Fprintln(stdout, "now: go test ./... && sam build && sam deploy   (or make local first)")
	return 0
}
