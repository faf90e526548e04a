// Package jsoncheck refuses the JSON that encoding/json accepts quietly. A
// key given twice in one object: the decoder keeps the last, so an added
// block silently replaces the first. Anything after the document: the
// decoder drops it. Keys that differ only in case are left alone: they are
// distinct map keys (tenants "acme" and "Acme").
package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// DuplicateError is a key given twice in one object.
type DuplicateError struct {
	Path string // the object, "$.stripe.tenants" style
	Key  string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%s: key %q appears twice", e.Path, e.Key)
}

// Strict reports the first of those problems in a configuration document,
// naming where it is ("$.stripe.tenants.acme" style), or a syntax error;
// nil when data is one JSON value without repeated keys.
func Strict(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var doc json.RawMessage
	if err := dec.Decode(&doc); err != nil {
		return syntax(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more after the JSON document: remove what follows it (or merge it into the document)")
	}
	if err := Duplicate(doc); err != nil {
		return fmt.Errorf("%w; JSON keeps only the last, so merge the two", err)
	}
	return nil
}

// Duplicate reports the first key given twice in an object of data on the
// way to one of paths (each a list of object keys from the top, such as
// data, object, id). Keys off the paths may repeat, and their values are
// skipped unread. With no paths, every object counts. Keys compare as a
// decoder sees them (escapes resolved, invalid UTF-8 replaced).
//
// data is meant to be JSON a decoder already checked. Duplicate returns a
// *DuplicateError, nil, or an error for structure it cannot follow. It does
// not validate what it skips, nor look past the first value. It reads data
// once, without building the document.
func Duplicate(data []byte, paths ...[]string) error {
	var sel selector
	if len(paths) > 0 {
		sel = selector{}
		for _, p := range paths {
			at := sel
			for _, k := range p {
				next, ok := at[k]
				if !ok {
					next = selector{}
					at[k] = next
				}
				at = next
			}
		}
	}
	s := scanner{data: data}
	return s.value(sel, sel == nil)
}

// selector is the tree of object keys a walk looks at.
type selector map[string]selector

// errEnds is what a document cut short gives.
var errEnds = errors.New("the JSON document ends early")

func syntax(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errEnds
	}
	return err
}

// scanner walks the structure of a JSON document.
type scanner struct {
	data []byte
	i    int
	at   []step // the way from the top to the current value, for errors
}

// step is one step of scanner.at: an object key or an array index.
type step struct {
	key   []byte
	index int
}

// path renders the way to the current value, "$.data[2].object" style.
func (s *scanner) path() string {
	var b strings.Builder
	b.WriteString("$")
	for _, st := range s.at {
		if st.index >= 0 {
			fmt.Fprintf(&b, "[%d]", st.index)
		} else {
			b.WriteByte('.')
			b.Write(st.key)
		}
	}
	return b.String()
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) fail() error {
	if s.i >= len(s.data) {
		return errEnds
	}
	return fmt.Errorf("invalid character %q at offset %d", s.data[s.i], s.i)
}

// value reads one value. With all set it checks the keys of every object
// in it; otherwise those sel names (nil: none, the value is skipped).
func (s *scanner) value(sel selector, all bool) error {
	s.space()
	if s.i >= len(s.data) {
		return errEnds
	}
	switch s.data[s.i] {
	case '{':
		return s.object(sel, all)
	case '[':
		s.i++
		s.space()
		if s.i < len(s.data) && s.data[s.i] == ']' {
			s.i++
			return nil
		}
		for n := 0; ; n++ {
			// Paths walk objects only: below an array only all looks.
			if all {
				s.at = append(s.at, step{index: n})
			}
			if err := s.value(nil, all); err != nil {
				return err
			}
			if all {
				s.at = s.at[:len(s.at)-1]
			}
			s.space()
			if s.i >= len(s.data) {
				return errEnds
			}
			switch s.data[s.i] {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return s.fail()
			}
		}
	case '"':
		_, err := s.str()
		return err
	default:
		start := s.i
	scalar:
		for ; s.i < len(s.data); s.i++ {
			switch s.data[s.i] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				break scalar
			}
		}
		if s.i == start {
			return s.fail()
		}
		return nil
	}
}

// object reads an object, s.i at its '{'.
func (s *scanner) object(sel selector, all bool) error {
	s.i++
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return nil
	}
	var seen keySet
	for {
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return s.fail()
		}
		raw, err := s.str()
		if err != nil {
			return err
		}
		key := raw
		if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
			// As a decoder reads it: escapes resolved, bad UTF-8 replaced.
			var k string
			if err := json.Unmarshal(s.data[s.i-len(raw)-2:s.i], &k); err != nil {
				return err
			}
			key = []byte(k)
		}
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return s.fail()
		}
		s.i++
		next, wanted := sel[string(key)]
		if all || wanted {
			if seen.add(key) {
				return &DuplicateError{Path: s.path(), Key: string(key)}
			}
		}
		if all || len(next) > 0 {
			s.at = append(s.at, step{key: key, index: -1})
			err = s.value(next, all)
			s.at = s.at[:len(s.at)-1]
		} else {
			err = s.value(nil, false)
		}
		if err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.data) {
			return errEnds
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.fail()
		}
	}
}

// str reads a string, s.i at its opening quote, and returns its raw
// contents.
func (s *scanner) str() ([]byte, error) {
	s.i++
	start := s.i
	for {
		j := bytes.IndexByte(s.data[s.i:], '"')
		if j < 0 {
			s.i = len(s.data)
			return nil, errEnds
		}
		s.i += j
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for k := s.i - 1; k >= start && s.data[k] == '\\'; k-- {
			n++
		}
		s.i++
		if n%2 == 0 {
			return s.data[start : s.i-1], nil
		}
	}
}

// keySet holds the keys of one object: a few in a slice, more in a map.
type keySet struct {
	few  [][]byte
	many map[string]struct{}
}

// smallObject is how many keys keySet compares one by one.
const smallObject = 16

// add adds k and reports whether it was there already.
func (ks *keySet) add(k []byte) bool {
	if ks.many != nil {
		if _, ok := ks.many[string(k)]; ok {
			return true
		}
		ks.many[string(k)] = struct{}{}
		return false
	}
	for _, f := range ks.few {
		if bytes.Equal(f, k) {
			return true
		}
	}
	ks.few = append(ks.few, k)
	if len(ks.few) > smallObject {
		ks.many = make(map[string]struct{}, 2*len(ks.few))
		for _, f := range ks.few {
			ks.many[string(f)] = struct{}{}
		}
		ks.few = nil
	}
	return false
}
