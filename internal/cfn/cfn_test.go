package cfn

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadAndGet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "template.yaml")
	doc := "Resources:\n  Queue:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Ref Name\n  Queue:\n    Type: AWS::SQS::Queue2\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := Value(Get(root, "Resources", "Queue", "Type")); got != "AWS::SQS::Queue2" {
		t.Errorf("a key given twice: %q, want the last", got)
	}
	if n := Get(root, "Resources", "Missing", "Type"); n != nil || Value(n) != "" {
		t.Errorf("a missing key: %v", n)
	}
	if n := Get(root, "Resources", "Queue", "Type", "Deeper"); n != nil {
		t.Errorf("below a scalar: %v", n)
	}
	for name, text := range map[string]string{"empty": "", "list": "- a\n", "broken": "a: [\n"} {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); err == nil {
			t.Errorf("%s: read as a template", name)
		}
	}
}
