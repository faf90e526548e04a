package hookledger_test

import (
	"testing"

	"github.com/hookledger/hookledger/internal/cfn"
	"github.com/hookledger/hookledger/version"
)

// TestVersionOutputIsTheRelease: the stack's Version output is
// version.Version, which the template cannot import; a release bumps both.
func TestVersionOutputIsTheRelease(t *testing.T) {
	t.Parallel()
	v := cfn.Get(loadTemplate(t).root, "Outputs", "Version", "Value")
	if v == nil || v.Value != version.Version {
		t.Fatalf("template.yaml Outputs.Version is %v, want %q (version.Version): change them together", v, version.Version)
	}
}
