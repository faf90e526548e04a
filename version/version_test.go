package version

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestOneVersion: the version is a semantic version, the project template
// (cookiecutter.json) makes projects require this one, and CHANGELOG.md
// has its section, so that hookledger upgrade can print it.
func TestOneVersion(t *testing.T) {
	if !regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`).MatchString(Version) {
		t.Errorf("Version %q is not MAJOR.MINOR.PATCH", Version)
	}
	b, err := os.ReadFile("../cookiecutter.json")
	if err != nil {
		t.Fatal(err)
	}
	var cc map[string]any
	if err := json.Unmarshal(b, &cc); err != nil {
		t.Fatalf("cookiecutter.json: %v", err)
	}
	if got := cc["_hookledger_version"]; got != Version {
		t.Errorf("cookiecutter.json makes projects require %v, want %s (change it with Version)", got, Version)
	}
	log, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "\n## "+Version+"\n") {
		t.Errorf("CHANGELOG.md has no section headed ## %s", Version)
	}
}
