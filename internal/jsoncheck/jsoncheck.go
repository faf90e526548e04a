// Package jsoncheck refuses the JSON that encoding/json accepts quietly and
// a hand-edited configuration document gets wrong: a key given twice in one
// object (the decoder keeps the last, so an added block silently replaces
// the first) and anything after the document (the decoder stops at the
// first value and drops the rest). Keys that differ only in case are left
// alone: they are distinct map keys (tenants "acme" and "Acme"), though a
// struct field matches either.
package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Strict reports the first of those problems in data, naming where it is
// ("$.stripe.tenants.acme" style), or a syntax error; nil when data is one
// JSON value without repeated keys.
func Strict(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := value(dec, "$"); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more after the JSON document: remove what follows it (or merge it into the document)")
	}
	return nil
}

// value reads one value at path.
func value(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntax(err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return syntax(err)
			}
			k, _ := tok.(string)
			if seen[k] {
				return fmt.Errorf("%s: key %q appears twice; JSON keeps only the last, so merge the two", path, k)
			}
			seen[k] = true
			if err := value(dec, path+"."+k); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := value(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return syntax(err)
	}
	return nil
}

func syntax(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("the JSON document ends early")
	}
	return err
}
