package idempotency

import (
	"encoding/json"
	"testing"
)

// TestCanonicalGolden pins the key encoding: changing it changes every
// stored key (every repeat after a deploy would run again), so it must
// never change by accident.
func TestCanonicalGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in        any
		canon     string
		digestHex string
	}{
		{"o-1", `"o-1"`, "00d5c8b71f851bbe47626a189b20fb19c11753e244bb658095c370ba3798f85c"},
		{map[string]any{"b": 1, "a": []any{true, nil, "x<y>&"}}, `{"a":[true,null,"x<y>&"],"b":1}`, ""},
		{json.RawMessage(` { "z" : 1.0 , "a" : -0 , "m" : 1e2, "f": 0.10, "big": 123456789012345678901234567890 } `),
			`{"a":0,"big":123456789012345678901234567890,"f":0.1,"m":100,"z":1}`, "8d93ed170c8d3fbfaf888ba1a7ac152767a633f696d5f0a42a8b9ade8ff59182"},
		{struct {
			ID  string `json:"id"`
			Qty int    `json:"qty"`
		}{"o-1", 2}, `{"id":"o-1","qty":2}`, ""},
		{[]any{"é", "\u2028"}, `["é","\u2028"]`, ""},
	}
	for _, tt := range tests {
		c, err := canonical(tt.in)
		if err != nil || string(c) != tt.canon {
			t.Errorf("canonical(%#v) = %s (%v), want %s", tt.in, c, err, tt.canon)
		}
		if tt.digestHex != "" && digest(c) != tt.digestHex {
			t.Errorf("digest(%s) = %s, want %s", c, digest(c), tt.digestHex)
		}
	}
	k, err := KeyOf("create-order", "o-1")
	if err != nil || k != "create-order#00d5c8b71f851bbe47626a189b20fb19c11753e244bb658095c370ba3798f85c" {
		t.Fatalf("KeyOf: %s %v", k, err)
	}
}

func TestMissing(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`null`, `""`, `[]`, `{}`, `[null,""]`, `[[],{}]`} {
		if !missing([]byte(s)) {
			t.Errorf("%s should count as no key", s)
		}
	}
	for _, s := range []string{`0`, `false`, `"0"`, `[null,1]`, `{"a":null}`, `" "`} {
		if missing([]byte(s)) {
			t.Errorf("%s should count as a key", s)
		}
	}
}

func jsonValid(s string) bool { return json.Valid([]byte(s)) }
