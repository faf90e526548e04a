package project

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// engineTemplate is the repository's template.yaml, the engine's.
func engineTemplate(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", TemplateFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keys returns the names under each top-level section of a template.
func keys(t *testing.T, tmpl []byte) map[string][]string {
	t.Helper()
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(tmpl, &doc); err != nil {
		t.Fatalf("the merged template does not parse: %v", err)
	}
	out := map[string][]string{}
	for section, n := range doc {
		for i := 0; i+1 < len(n.Content); i += 2 {
			out[section] = append(out[section], n.Content[i].Value)
		}
	}
	return out
}

// TestMergeAddsTheProjectsEntries merges a project's parameter, condition,
// resources and output into the engine's template: each lands in its
// section beside the engine's, and every line of the engine's template is
// still there, in order, untouched.
func TestMergeAddsTheProjectsEntries(t *testing.T) {
	t.Parallel()
	engine := engineTemplate(t)
	own, err := os.ReadFile("testdata/resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const header = "# generated\n"
	merged, err := Merge(engine, own, header)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(merged), header) {
		t.Errorf("the merged template does not open with the header:\n%.200s", merged)
	}
	got, want := keys(t, merged), keys(t, engine)
	for section, names := range map[string][]string{
		"Parameters": {"OrdersTableName"}, "Conditions": {"HasOrders"},
		"Resources": {"OrdersTable", "ProcessorOrdersAccess"}, "Outputs": {"OrdersTableArn"},
	} {
		if w := append(slices.Clone(want[section]), names...); !slices.Equal(got[section], w) {
			t.Errorf("%s: %v, want the engine's then %v", section, got[section], names)
		}
	}
	// The engine's lines are a subsequence of the merged template's.
	rest := strings.Split(string(merged), "\n")
	for i, l := range strings.Split(string(engine), "\n") {
		j := slices.Index(rest, l)
		if j < 0 {
			t.Fatalf("engine line %d %q is missing from the merged template, or out of order", i+1, l)
		}
		rest = rest[j+1:]
	}
	// The project's values arrive whole: tags, flow sequences, folded text.
	var doc struct {
		Resources map[string]struct {
			Properties struct {
				Roles []yaml.Node `yaml:"Roles"`
			} `yaml:"Properties"`
		} `yaml:"Resources"`
		Outputs map[string]struct {
			Description string `yaml:"Description"`
		} `yaml:"Outputs"`
	}
	if err := yaml.Unmarshal(merged, &doc); err != nil {
		t.Fatal(err)
	}
	if r := doc.Resources["ProcessorOrdersAccess"].Properties.Roles; len(r) != 1 || r[0].Tag != "!Ref" || r[0].Value != "ProcessorRole" {
		t.Errorf("the policy's Roles came out as %+v, want [!Ref ProcessorRole]", r)
	}
	if d := doc.Outputs["OrdersTableArn"].Description; d != "The orders table, a resource of the project's own." {
		t.Errorf("the output's description came out as %q", d)
	}
}

// TestMergeWithoutResources: no resources.yaml, or one of comments and
// empty sections, gives the engine's template as it is, after the header.
func TestMergeWithoutResources(t *testing.T) {
	t.Parallel()
	engine := engineTemplate(t)
	for _, own := range []string{"", "# nothing yet\n", "Resources:\nOutputs: {}\n"} {
		merged, err := Merge(engine, []byte(own), "# h\n")
		if err != nil {
			t.Fatalf("%q: %v", own, err)
		}
		if string(merged) != "# h\n"+string(engine) {
			t.Errorf("%q: the merged template differs from the engine's", own)
		}
	}
}

// TestMergeAddsASectionTheEngineLacks appends it at the end.
func TestMergeAddsASectionTheEngineLacks(t *testing.T) {
	t.Parallel()
	engine := "Resources:\n  A:\n    Type: AWS::SQS::Queue\n# the end"
	merged, err := Merge([]byte(engine), []byte("Outputs:\n  B: {Value: !Ref A}\nResources:\n  C:\n    Type: AWS::SQS::Queue\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := "Resources:\n  A:\n    Type: AWS::SQS::Queue\n  C:\n    Type: AWS::SQS::Queue\n# the end\n\nOutputs:\n  B: {Value: !Ref A}\n"
	if string(merged) != want {
		t.Errorf("merged:\n%s\nwant:\n%s", merged, want)
	}
}

// TestMergeRefuses: a name the engine uses, a section resources.yaml may
// not add to, and a section that is not a mapping are errors that say
// where and what to do; nothing is merged.
func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	engine := engineTemplate(t)
	for own, want := range map[string]string{
		"Resources:\n  Mine:\n    Type: AWS::SQS::Queue\n  LedgerTable:\n    Type: AWS::SQS::Queue\n": "resources.yaml line 4: Resources.LedgerTable is also in the engine's template.yaml (line ",
		"Outputs:\n  QueueUrl:\n    Value: x\n":                                                       "Outputs.QueueUrl is also in the engine's template.yaml",
		"Globals:\n  Function:\n    Timeout: 3\n":                                                     "resources.yaml line 1: top-level key Globals: resources.yaml adds to Parameters, Mappings, Conditions, Resources, Outputs only",
		"Resources:\n  - Type: AWS::SQS::Queue\n":                                                     "resources.yaml line 1: Resources is not a mapping",
		"- just a list\n":      "resources.yaml: line 1: the document is not a mapping of sections",
		"Resources:\n  A: [\n": "resources.yaml: yaml: line",
	} {
		merged, err := Merge(engine, []byte(own), "")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", own, err, want)
		}
		if merged != nil {
			t.Errorf("%q: merged something despite the error", own)
		}
	}
}

// TestFunctions lists the folders the engine's template builds.
func TestFunctions(t *testing.T) {
	t.Parallel()
	got, err := Functions(engineTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"functions/bus", "functions/processor", "functions/receiver", "functions/reclaimer", "functions/reconciler"}
	if !slices.Equal(got, want) {
		t.Errorf("functions %v, want %v", got, want)
	}
}
