// Package project is what a project made with sam init needs from the
// engine: its template.yaml built from the engine's and the project's own
// resources.yaml, the changelog between two versions, and where the engine
// module is on this machine.
package project

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Sections are the top-level keys resources.yaml may add to: names the
// engine's template does not use are added, a name it uses is an error.
var Sections = []string{"Parameters", "Mappings", "Conditions", "Resources", "Outputs"}

// Merge returns the engine's template with the entries of resources added
// to its sections, after header (comment lines). The engine's text is kept
// as it is; the project's entries are inserted at the end of each section,
// or in a new section at the end when the engine has none of that name.
func Merge(engine, resources []byte, header string) ([]byte, error) {
	eng, err := topLevel(engine)
	if err != nil {
		return nil, fmt.Errorf("the engine's template.yaml: %w", err)
	}
	own, err := topLevel(resources)
	if err != nil {
		return nil, fmt.Errorf("resources.yaml: %w", err)
	}
	lines := strings.SplitAfter(string(engine), "\n")
	var tail []string // sections the engine lacks, appended at the end
	inserts := map[int][]string{}
	for i := 0; i+1 < len(own.Content); i += 2 {
		key, val := own.Content[i], own.Content[i+1]
		if !slices.Contains(Sections, key.Value) {
			return nil, fmt.Errorf("resources.yaml line %d: top-level key %s: resources.yaml adds to %s only (the rest of the stack is the engine's)",
				key.Line, key.Value, strings.Join(Sections, ", "))
		}
		if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
			continue // "Resources:" with nothing under it yet
		}
		if val.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("resources.yaml line %d: %s is not a mapping of names to definitions", key.Line, key.Value)
		}
		if len(val.Content) == 0 {
			continue
		}
		at, engVal := find(eng, key.Value)
		if engVal != nil {
			for j := 0; j+1 < len(val.Content); j += 2 {
				name := val.Content[j]
				if _, dup := find(engVal, name.Value); dup != nil {
					return nil, fmt.Errorf("resources.yaml line %d: %s.%s is also in the engine's template.yaml (line %d): rename yours",
						name.Line, key.Value, name.Value, dup.Line)
				}
			}
			if engVal.Kind != yaml.MappingNode || engVal.Style&yaml.FlowStyle != 0 {
				return nil, fmt.Errorf("the engine's template.yaml line %d: %s is not a block mapping; it cannot take resources.yaml's entries", at.Line, key.Value)
			}
		}
		body, err := encode(val)
		if err != nil {
			return nil, fmt.Errorf("resources.yaml: %s: %w", key.Value, err)
		}
		if engVal == nil {
			tail = append(tail, "\n"+key.Value+":\n"+body)
			continue
		}
		end := sectionEnd(lines, eng, at)
		inserts[end] = append(inserts[end], body)
	}
	var out strings.Builder
	out.WriteString(header)
	for i, l := range lines {
		for _, body := range inserts[i] {
			newline(&out)
			out.WriteString(body)
		}
		out.WriteString(l)
	}
	for _, s := range tail {
		newline(&out)
		out.WriteString(s)
	}
	var check yaml.Node
	if err := yaml.Unmarshal([]byte(out.String()), &check); err != nil {
		return nil, fmt.Errorf("the merged template does not parse (report this with your resources.yaml): %w", err)
	}
	return []byte(out.String()), nil
}

// newline ends b's last line, if it has one that is not ended.
func newline(b *strings.Builder) {
	if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
		b.WriteString("\n")
	}
}

// topLevel parses a YAML document and returns its top-level mapping (empty
// for a document of comments only).
func topLevel(b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the document is not a mapping of sections (Resources:, Outputs:, ...)", top.Line)
	}
	return top, nil
}

// find returns the key and value nodes of name in mapping m, or nils.
func find(m *yaml.Node, name string) (key, val *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == name {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// sectionEnd is the index in lines (0-based) before which the section
// whose key is at goes on: after its last line of content, before the
// blank lines and comments that lead into the next section.
func sectionEnd(lines []string, top, at *yaml.Node) int {
	next := len(lines)
	for i := 0; i+1 < len(top.Content); i += 2 {
		if l := top.Content[i].Line; l > at.Line && l-1 < next {
			next = l - 1
		}
	}
	for next > at.Line {
		s := strings.TrimSpace(lines[next-1])
		if s != "" && !strings.HasPrefix(s, "#") {
			break
		}
		next--
	}
	return next
}

// encode writes a mapping's entries as block YAML indented under a
// top-level key (two spaces), ending in a newline.
func encode(m *yaml.Node) (string, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	block := *m
	block.Style &^= yaml.FlowStyle
	block.HeadComment, block.LineComment, block.FootComment = "", "", ""
	if err := enc.Encode(&block); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	var out strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimRight(buf.String(), "\n")+"\n", "\n") {
		if strings.TrimSpace(l) == "" {
			out.WriteString(l)
			continue
		}
		out.WriteString("  " + l)
	}
	return out.String(), nil
}

// Functions returns the CodeUri folders of the template's functions
// (AWS::Serverless::Function with a CodeUri of a local folder), cleaned of
// their trailing slash.
func Functions(template []byte) ([]string, error) {
	var t struct {
		Resources map[string]struct {
			Type       string `yaml:"Type"`
			Properties struct {
				CodeUri any `yaml:"CodeUri"`
			} `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(template, &t); err != nil {
		return nil, err
	}
	var dirs []string
	for _, r := range t.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		if uri, ok := r.Properties.CodeUri.(string); ok && uri != "" && !strings.Contains(uri, "://") {
			dirs = append(dirs, strings.TrimSuffix(uri, "/"))
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New("no function with a local CodeUri")
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), nil
}
