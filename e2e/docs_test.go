package e2e

// The sources examples in the README and the docs are what users copy; the
// samconfig.toml sections are what they deploy with. Before, the examples
// referenced secrets the prod section did not grant, so on AWS every
// delivery would have got 503. These tests run with the unit tests.

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/source"
)

// grantsOf reads a samconfig.toml section's secret grants.
func grantsOf(t *testing.T, section string) source.Grants {
	t.Helper()
	raw, err := os.ReadFile("../samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "["+section+".deploy.parameters]")
	if !ok {
		t.Fatalf("samconfig.toml has no [%s.deploy.parameters]", section)
	}
	if i := strings.Index(after, "\n["); i >= 0 {
		after = after[:i]
	}
	var g source.Grants
	for _, m := range regexp.MustCompile(`"(SecretsParameterPath|SecretsManagerPrefix|SecretsManagerSecretArn)=([^"]*)"`).FindAllStringSubmatch(after, -1) {
		switch m[1] {
		case "SecretsParameterPath":
			g.SSMPath = m[2]
		case "SecretsManagerPrefix":
			g.SecretsManagerPrefix = m[2]
		case "SecretsManagerSecretArn":
			g.SecretsManagerARN = m[2]
		}
	}
	return g
}

// sourcesExamples returns every JSON block (fenced, or the quoted value of a
// SourcesConfig line) in a doc that is a sources config.
func sourcesExamples(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(m[1], `"tenants"`) && !strings.Contains(m[1], "<source>") {
			out = append(out, m[1])
		}
	}
	for _, m := range regexp.MustCompile(`SourcesConfig: '(\{.*\})'`).FindAllStringSubmatch(string(raw), -1) {
		out = append(out, m[1])
	}
	return out
}

func TestDocumentedSourcesAreValidAndWithinTheGrants(t *testing.T) {
	t.Parallel()
	prod := grantsOf(t, "prod")
	if prod.SSMPath == "" || prod.SecretsManagerPrefix == "" {
		t.Fatalf("samconfig.toml [prod] grants %+v; the docs' examples need an SSM path and a Secrets Manager prefix", prod)
	}
	total := 0
	for _, doc := range []string{"../README.md", "../docs/deploy.md", "../docs/providers.md"} {
		for _, ex := range sourcesExamples(t, doc) {
			total++
			var probe map[string]json.RawMessage
			if err := json.NewDecoder(bytes.NewReader([]byte(ex))).Decode(&probe); err != nil {
				t.Errorf("%s: example is not JSON: %v\n%s", doc, err, ex)
				continue
			}
			cfg, err := source.Parse([]byte(ex))
			if err != nil {
				t.Errorf("%s: %v", doc, err)
				continue
			}
			reg, err := source.NewRegistry(cfg, &source.Secrets{})
			if err != nil {
				t.Errorf("%s: %v", doc, err)
				continue
			}
			if err := reg.CheckGrants(prod); err != nil {
				t.Errorf("%s: an example references secrets samconfig.toml's prod section does not grant:\n%v", doc, err)
			}
		}
	}
	if total < 4 {
		t.Errorf("found only %d sources examples in the docs; the extraction broke", total)
	}
}

// make e2e deploys with the dev section's grants and stores its secrets under
// them; the dev and default sections must grant both stores.
func TestSamconfigSectionsGrantBothStores(t *testing.T) {
	t.Parallel()
	for _, section := range []string{"default", "dev", "prod"} {
		g := grantsOf(t, section)
		if g.SSMPath == "" || g.SecretsManagerPrefix == "" || !strings.Contains(g.SSMPath, section) && section != "default" {
			t.Errorf("[%s] grants %+v; want SecretsParameterPath=/hookledger/%s and SecretsManagerPrefix=hookledger/%s/", section, g, section, section)
		}
	}
}
