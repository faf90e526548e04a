package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestStrict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"stripe":{"tenants":{"acme":{"secrets":["a"]},"beta":{}}}}`, ""},
		{`[{"a":1},{"a":2}]`, ""},
		{`"x"`, ""},
		{`{"stripe":{"tenants":{"acme":{"secrets":["a"]},"acme":{"secrets":["b"]}}}}`, `$.stripe.tenants: key "acme" appears twice`},
		{`{"stripe":{"tenants":{"acme":{},"Acme":{}}}}`, ""}, // two tenants
		{`{"a":1} {"b":2}`, "more after the JSON document"},
		{`{"a":1} xyz`, "more after the JSON document"},
		{`[{"a":1,"a":1}]`, `$[0]: key "a" appears twice`},
		{`{"a":`, "ends early"},
		{`{"a" 1}`, "invalid"},
	} {
		err := Strict([]byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestDuplicate(t *testing.T) {
	t.Parallel()
	id, typ := []string{"id"}, []string{"type"}
	nested := []string{"data", "object", "id"}
	for _, tc := range []struct {
		in    string
		paths [][]string
		want  string // "" for nil
	}{
		{`{"id":"a","type":"t"}`, [][]string{id, typ}, ""},
		{`{"id":"a","id":"b"}`, [][]string{id}, `$: key "id" appears twice`},
		{`{"id":"a","type":"t","type":"u"}`, [][]string{id, typ}, `$: key "type" appears twice`},
		{`{"id":"a","id":"a"}`, [][]string{id}, `$: key "id" appears twice`}, // even with equal copies
		{`{"id":"a","x":1,"x":2,"y":{"z":1,"z":2}}`, [][]string{id}, ""},     // off the path
		{`{"data":{"object":{"id":1}},"data":{"object":{"id":2}}}`, [][]string{nested}, `$: key "data" appears twice`},
		{`{"data":{"object":{"id":1},"object":{}}}`, [][]string{nested}, `$.data: key "object" appears twice`},
		{`{"data":{"object":{"id":1,"id":2}}}`, [][]string{nested}, `$.data.object: key "id" appears twice`},
		{`{"data":[{"object":{"id":1,"id":2}}]}`, [][]string{nested}, ""}, // paths walk objects only
		{`{"id":{"a":1,"a":2}}`, [][]string{id}, ""},                      // below the end of a path
		{`[{"id":1,"id":2}]`, [][]string{id}, ""},
		{`"x"`, [][]string{id}, ""},
		{`{"\u0069d":1,"id":2}`, [][]string{id}, `$: key "id" appears twice`}, // as a decoder reads keys
		{"{\"\xff\":1,\"\xfe\":2}", nil, `appears twice`},                     // both become U+FFFD
		{`{"c":"}\"{","id":1,"id":2}`, [][]string{id}, `$: key "id" appears twice`},
		{`{"a":[{"b":1,"b":2}]}`, nil, `$.a[0]: key "b" appears twice`}, // no paths: everywhere
		{`{"a":1,"b":{"c":[1,{"d":2}]}}`, nil, ""},
		{`{"id":"a","x":[1,2`, [][]string{id}, "ends early"},
		{`{"id":`, [][]string{id}, "ends early"},
	} {
		err := Duplicate([]byte(tc.in), tc.paths...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v", tc.in, tc.paths, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: got %v, want %q", tc.in, tc.paths, err, tc.want)
		}
	}
	var d *DuplicateError
	if err := Duplicate([]byte(`{"x":{"id":1,"id":2}}`), []string{"x", "id"}); !errors.As(err, &d) || d.Path != "$.x" || d.Key != "id" {
		t.Errorf("got %#v, want a *DuplicateError at $.x for id", err)
	}
}

// FuzzDuplicate: Duplicate never panics, reports only a *DuplicateError or
// a syntax error, agrees with json.Valid on what is JSON, and what it finds
// along a path it also finds when it looks everywhere.
func FuzzDuplicate(f *testing.F) {
	f.Add([]byte(`{"id":"a","data":{"object":{"id":1}}}`), "data.object.id")
	f.Add([]byte(`{"a":1,"a":2}`), "a")
	f.Add([]byte(`[{"x":{"y":1,"y":2}}]`), "x.y")
	f.Add([]byte(`{"a":`), "a")
	f.Add([]byte(`{"\u0061":1,"a":2}`), "a")
	f.Add([]byte("{\"\xff\":1,\"\xfe\":2}"), "x")
	f.Add([]byte(`{"a":[],"b":{},"c":"}\"","d":[{"e":1},{"e":2}]}`), "d.e")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		p := strings.Split(path, ".")
		along, all := Duplicate(data, p), Duplicate(data)
		_, alongDup := errors.AsType[*DuplicateError](along)
		_, allDup := errors.AsType[*DuplicateError](all)
		if alongDup && !allDup {
			t.Fatalf("%q: a repeated key along %q (%v) but none everywhere (%v)", data, path, along, all)
		}
		if all == nil && along != nil {
			t.Fatalf("%q: nothing everywhere, yet %v along %q", data, along, path)
		}
		if json.Valid(data) && all != nil && !allDup {
			t.Fatalf("%q is JSON, yet %v", data, all)
		}
		if json.Valid(data) && allDup != tokenDuplicate(t, data) {
			t.Fatalf("%q: Duplicate says %v, a decoder's tokens say otherwise", data, all)
		}
	})
}

// tokenDuplicate is the slow reference: whether a decoder's tokens show a
// key twice in one object of valid JSON data.
func tokenDuplicate(t *testing.T, data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object  bool
		seen    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("tokens of valid JSON %q: %v", data, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k := tok.(string)
			if top.seen[k] {
				return true
			}
			top.seen[k], top.wantKey = true, false
			continue
		}
		if top != nil && top.object {
			top.wantKey = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, seen: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}
