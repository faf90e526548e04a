package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A path selects part of an input by its JSON encoding, as a Lambda event
// arrives: "body.order_id", "headers.idempotency-key", "Records[0].messageId",
// `detail."order.id"`. Steps are member names separated by dots, each
// optionally followed by array indexes ([0]); a name with dots, brackets,
// quotes, commas or spaces is written as a JSON string. "$" is the whole
// input. Several paths separated by commas select a list ("body.user,
// body.cart").
//
// When a step meets a string whose text is JSON (API Gateway's body, an SQS
// message's body, an SNS message) and the path goes on, the string is
// decoded and the path continues inside it, so "body.order_id" works on an
// API Gateway event without any decoding function.
//
// HTTP header names are case-insensitive, and Lambda's HTTP events do not
// agree on their case: an HTTP API (payload 2.0) and a function URL lower
// them, a REST API (payload 1.0) and an ALB pass them as the client sent
// them. So the step right after a top-level "headers" or "multiValueHeaders"
// matches a member whatever its case ("headers.idempotency-key" finds
// "Idempotency-Key"); a member spelt exactly as the path wins over one that
// differs only in case. Every other step, body fields included, matches
// exactly.
type path struct {
	text  string
	steps []step
}

type step struct {
	name  string // "" for a bare index step
	index []int
}

// paths is one or more comma-separated paths.
type paths []path

func parsePaths(s string) (paths, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty path")
	}
	var out paths
	p := &pathParser{s: s}
	for {
		pt, err := p.path()
		if err != nil {
			return nil, err
		}
		out = append(out, pt)
		p.space()
		if p.i == len(p.s) {
			return out, nil
		}
		if p.s[p.i] != ',' {
			return nil, p.errorf("expected ',' or the end")
		}
		p.i++
	}
}

type pathParser struct {
	s string
	i int
}

func (p *pathParser) errorf(format string, a ...any) error {
	return fmt.Errorf("path %q at offset %d: %s", p.s, p.i, fmt.Sprintf(format, a...))
}

func (p *pathParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *pathParser) path() (path, error) {
	p.space()
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '$' {
		p.i++
		p.space()
		if p.i == len(p.s) || p.s[p.i] == ',' {
			return path{text: "$"}, nil
		}
		if p.s[p.i] != '.' && p.s[p.i] != '[' {
			return path{}, p.errorf("expected '.' or '[' after '$'")
		}
		if p.s[p.i] == '.' {
			p.i++
		}
	}
	var steps []step
	for {
		st, err := p.step()
		if err != nil {
			return path{}, err
		}
		steps = append(steps, st)
		if p.i < len(p.s) && p.s[p.i] == '.' {
			p.i++
			continue
		}
		break
	}
	return path{text: strings.TrimSpace(p.s[start:p.i]), steps: steps}, nil
}

func (p *pathParser) step() (step, error) {
	var st step
	switch {
	case p.i < len(p.s) && p.s[p.i] == '"':
		end := p.i + 1
		for end < len(p.s) && p.s[end] != '"' {
			if p.s[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(p.s) {
			return st, p.errorf("unterminated quoted name")
		}
		name, err := strconv.Unquote(p.s[p.i : end+1])
		if err != nil {
			return st, p.errorf("bad quoted name: %v", err)
		}
		st.name = name
		p.i = end + 1
	case p.i < len(p.s) && p.s[p.i] == '[':
		// a bare index step: only where the value is an array
	default:
		start := p.i
		for p.i < len(p.s) && !strings.ContainsRune(`.[]",$ `+"\t", rune(p.s[p.i])) {
			p.i++
		}
		if p.i == start {
			return st, p.errorf("expected a member name")
		}
		st.name = p.s[start:p.i]
	}
	for p.i < len(p.s) && p.s[p.i] == '[' {
		end := strings.IndexByte(p.s[p.i:], ']')
		if end < 0 {
			return st, p.errorf("unterminated index")
		}
		n, err := strconv.Atoi(p.s[p.i+1 : p.i+end])
		if err != nil || n < 0 {
			return st, p.errorf("index %q is not a non-negative integer", p.s[p.i+1:p.i+end])
		}
		st.index = append(st.index, n)
		p.i += end + 1
	}
	if st.name == "" && len(st.index) == 0 {
		return st, p.errorf("empty step")
	}
	return st, nil
}

// String is the paths as configured.
func (ps paths) String() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.text
	}
	return strings.Join(s, ", ")
}

// selectCanonical evaluates the paths over doc (JSON text) and returns the
// selection as canonical JSON: the value for one path, a list for several.
// A path that finds nothing selects null.
func (ps paths) selectCanonical(doc []byte) ([]byte, error) {
	if len(ps) == 1 {
		raw, err := ps[0].eval(doc)
		if err != nil {
			return nil, err
		}
		return canonicalRaw(raw)
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, p := range ps {
		raw, err := p.eval(doc)
		if err != nil {
			return nil, err
		}
		c, err := canonicalRaw(raw)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(c)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

var null = []byte("null")

// eval returns the raw JSON the path selects in doc, or null.
func (p path) eval(doc []byte) ([]byte, error) {
	cur := doc
	for i, st := range p.steps {
		cur = bytes.TrimSpace(cur)
		if st.name != "" {
			var err error
			if cur, err = p.descendString(cur, st.name); err != nil {
				return nil, err
			}
			if len(cur) == 0 || cur[0] != '{' {
				return null, nil
			}
			if cur = member(cur, st.name, i == 1 && p.headerStep()); cur == nil {
				return null, nil
			}
		}
		for _, ix := range st.index {
			var err error
			if cur, err = p.descendString(bytes.TrimSpace(cur), fmt.Sprint(ix)); err != nil {
				return nil, err
			}
			if len(cur) == 0 || cur[0] != '[' {
				return null, nil
			}
			if cur = element(cur, ix); cur == nil {
				return null, nil
			}
		}
	}
	return cur, nil
}

// headerStep reports whether the path starts at a Lambda HTTP event's header
// map, so that its second step names a header.
func (p path) headerStep() bool {
	if len(p.steps) < 2 || len(p.steps[0].index) > 0 {
		return false
	}
	n := p.steps[0].name
	return n == "headers" || n == "multiValueHeaders"
}

// descendString decodes a JSON string holding JSON text when the path has
// to go inside it.
func (p path) descendString(cur []byte, next string) ([]byte, error) {
	if len(cur) == 0 || cur[0] != '"' {
		return cur, nil
	}
	// Decoding would turn invalid UTF-8 into U+FFFD, and what the path
	// then selects inside could collide with another input's.
	if err := checkStrings(cur[:skipString(cur, 0)]); err != nil {
		return nil, fmt.Errorf("path %s: the string before %q: %w", p.text, next, err)
	}
	var s string
	if err := json.Unmarshal(cur, &s); err != nil {
		return nil, err
	}
	inner := bytes.TrimSpace([]byte(s))
	if len(inner) == 0 || (inner[0] != '{' && inner[0] != '[') {
		return nil, fmt.Errorf("path %s: the value before %q is a string that is not a JSON object or array", p.text, next)
	}
	return inner, nil
}

// member returns the raw value of the last member called name in the object
// obj (text starting '{'), or nil. With fold, a member whose name differs
// from name only in case is found when none is spelt exactly (the last such
// one). It never reads past obj and always makes progress, so text that is
// not JSON yields garbage or nil, never a panic or a hang; the caller
// validates what it selected.
func member(obj []byte, name string, fold bool) []byte {
	var found, folded []byte
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] != '}' {
		kEnd := skipString(obj, i)
		key := obj[i:kEnd]
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return nil
		}
		i = skipSpace(obj, i+1)
		if i >= len(obj) {
			return nil
		}
		vEnd := skipValue(obj, i)
		switch {
		case keyEquals(key, name):
			found = obj[i:vEnd]
		case fold && keyEqualsFold(key, name):
			folded = obj[i:vEnd]
		}
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	if found == nil {
		return folded
	}
	return found
}

// element returns the raw n-th element of the array arr (text starting
// '['), or nil; safe on text that is not JSON, as member is.
func element(arr []byte, n int) []byte {
	i := skipSpace(arr, 1)
	for k := 0; i < len(arr) && arr[i] != ']'; k++ {
		end := skipValue(arr, i)
		if k == n {
			return arr[i:end]
		}
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return nil
}

func keyEquals(quoted []byte, name string) bool {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return len(quoted) == len(name)+2 && string(quoted[1:len(quoted)-1]) == name
	}
	var k string
	return json.Unmarshal(quoted, &k) == nil && k == name
}

// keyEqualsFold is keyEquals ignoring ASCII case, as HTTP compares header
// names (the Kelvin sign is not a k).
func keyEqualsFold(quoted []byte, name string) bool {
	if len(quoted) < 2 {
		return false
	}
	k := string(quoted[1 : len(quoted)-1])
	if bytes.IndexByte(quoted, '\\') >= 0 && json.Unmarshal(quoted, &k) != nil {
		return false
	}
	if len(k) != len(name) {
		return false
	}
	for i := range len(k) {
		a, b := k[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at i.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at i (valid JSON).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		j := i + 1 // at least one byte, whatever it is
		for j < len(b) && !strings.ContainsRune(",}] \n\r\t", rune(b[j])) {
			j++
		}
		return j
	}
}
