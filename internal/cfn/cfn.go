// Package cfn reads a CloudFormation (SAM) template as a YAML node tree (tags
// such as !Ref stay on the nodes), for the template tests and the lab's
// cost model.
package cfn

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Read parses the template at path and returns its top-level mapping.
func Read(path string) (*yaml.Node, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a template (no top-level mapping)", path)
	}
	return doc.Content[0], nil
}

// Get walks mapping keys down from n. It returns nil when a key is missing
// or a node on the way is not a mapping; of a key given twice, the last.
func Get(n *yaml.Node, path ...string) *yaml.Node {
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

// Value is n's scalar text, "" for nil.
func Value(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}
