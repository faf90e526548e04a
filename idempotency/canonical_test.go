package idempotency

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
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

// TestCanonicalDigestsKept pins digests taken before numbers were
// normalised as exact text: integers, and non-integers that float64
// carries exactly as written, keep their keys, so records stored before
// the change still match.
func TestCanonicalDigestsKept(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, canon, digestHex string }{
		{`0`, `0`, "5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9"},
		{`-0`, `0`, "5feceb66ffc86f38d952786c6d696c79c2dbc239dd4e91b46729d73a27fb57e9"},
		{`7`, `7`, "7902699be42c8a8e46fbbb4501726517e86b22c56a189f7625a6da49081b2451"},
		{`-42`, `-42`, "fec80006df0542549b4cbaafb8987eee00bb49bca396eefe9ac8be5b5928e8f6"},
		{`9007199254740993`, `9007199254740993`, "a1c367c29158357e62a3ff5d3e800fb7698a22396439dbc0a9d4929322afd35d"},
		{`123456789012345678901234567890`, `123456789012345678901234567890`, "f54e5c8f810648e7638d25eb7ed6d24b7e5999d588e88826f2aa837d2ee52ecd"},
		{`{"id":1,"qty":2}`, `{"id":1,"qty":2}`, "e44d4bb2a19e2f9417dd9c16fc2d1ace79e536cdd151d35131c637874447a102"},
		{`[1,-1,100]`, `[1,-1,100]`, "518b33f6d1c7f7ddb8550ef6bcc126c7446495edb2f7c48e5a151f633bd9acd7"},
		{`1.0`, `1`, "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"},
		{`1e2`, `100`, "ad57366865126e55649ecb23ae1d48887544976efea46a48eb5d85a6eeb4d306"},
		{`0.1`, `0.1`, "14be4b45f18e0d8c67b4f719b5144eee88497e413709d11d85b096d8e2346310"},
		{`3.14`, `3.14`, "2efff1261c25d94dd6698ea1047f5c0a7107ca98b0a6c2427ee6614143500215"},
		{`-2.5e-7`, `-2.5e-07`, "2e22d2f90d8fbcff4423ccee3ee038442e2ab97e3d71a9e899706ba75edf753f"},
		{`1234567.5`, `1.2345675e+06`, "3f51871c95d08fbad95c30d6f605aef98096aa633d0aa6fbbf9219c297855b43"},
		{`1e300`, `1e+300`, "2b0de494c41db4c1bf0b41b0a3483db71f2b53a5e37caf5a61abee2d4169a935"},
		{`0.30000000000000004`, `0.30000000000000004`, "06bad31060c1212ae832de4c031f7b31e3b48aed57858294478cb19450cf34ca"},
	} {
		c, err := canonical(json.RawMessage(tt.in))
		if err != nil || string(c) != tt.canon || digest(c) != tt.digestHex {
			t.Errorf("%s: canonical %s (%v), digest %s; want %s and %s", tt.in, c, err, digest(c), tt.canon, tt.digestHex)
		}
	}
}

// TestCanonicalNumbersExact: every spelling of one number gives one key,
// and numbers that differ give different keys, however many digits they
// carry (float64 used to merge high-precision decimals and to keep
// integers past 2^53 in two spellings).
func TestCanonicalNumbersExact(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{`10000000000000000`, `1e16`, `1E+16`, `10000000000000000.0`, `0.1e17`, `100000000000000000000e-4`},
		{`1000000000000000000000`, `1e21`, `1.000e21`},
		{`1`, `1.0`, `1e0`, `10e-1`, `0.001e3`},
		{`0`, `-0`, `0.0`, `-0.0e5`, `0e-999999999999999999999`},
		{`-1.5`, `-15e-1`, `-0.15e1`, `-1.50`},
		{`0.1`, `0.10`, `1e-1`, `0.0001e3`},
		{`1e400`, `10e399`, `0.01e402`},
		{`1.5e-400`, `15e-401`},
		{`1e99999999999999999999999`, `10e99999999999999999999998`, `0.1e100000000000000000000000`},
	}
	for _, group := range same {
		want, err := canonical(json.RawMessage(group[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, lit := range group[1:] {
			if got, err := canonical(json.RawMessage(lit)); err != nil || string(got) != string(want) {
				t.Errorf("%s gives %s (%v), %s gives %s", lit, got, err, group[0], want)
			}
		}
	}
	differ := [][2]string{
		{`0.1000000000000000000001`, `0.1`},
		{`9007199254740993.5`, `9007199254740993`},
		{`1.00000000000000000000000000000001`, `1`},
		{`1e-400`, `0`},
		{`1e400`, `1e401`},
		{`-1e400`, `1e400`},
		{`12345678901234567890123`, `12345678901234567890124`},
	}
	for _, d := range differ {
		a, _ := canonical(json.RawMessage(d[0]))
		b, _ := canonical(json.RawMessage(d[1]))
		if string(a) == string(b) {
			t.Errorf("%s and %s share the key material %s", d[0], d[1], a)
		}
	}
	// A Go float64 and the literal it was decoded from agree.
	var f float64
	if err := json.Unmarshal([]byte(`1000000000000000000000`), &f); err != nil {
		t.Fatal(err)
	}
	a, _ := canonical(f)
	b, _ := canonical(json.RawMessage(`1000000000000000000000`))
	if string(a) != string(b) {
		t.Errorf("float64 %v gives %s, its literal %s", f, a, b)
	}
}

// TestCanonicalNumbersCheap: a literal with a huge exponent, or many of
// them, costs no more than its own text.
func TestCanonicalNumbersCheap(t *testing.T) {
	t.Parallel()
	lit := "[" + strings.Repeat(`1e999999999999999999,9.99e-99999999999999,`, 20000) + "1]"
	start := time.Now()
	c, err := canonical(json.RawMessage(lit))
	if err != nil {
		t.Fatal(err)
	}
	if len(c) > 2*len(lit) {
		t.Errorf("%d bytes of literals gave %d bytes of canonical JSON", len(lit), len(c))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestCanonicalRejectsInvalidUTF8: two different byte strings must never
// share a key. encoding/json replaces invalid UTF-8 (and lone surrogate
// escapes) with U+FFFD, which made them collide; they are refused instead.
// U+FFFD itself, written or escaped, is a key like any other.
func TestCanonicalRejectsInvalidUTF8(t *testing.T) {
	t.Parallel()
	type withField struct {
		ID string `json:"id"`
	}
	bad := []any{
		"\xff",
		string([]byte{0x9f, 0x01, 0xff}),
		"ok\xc0",
		[]string{"a", "b\xfe"},
		map[string]int{"k\xff": 1},
		withField{ID: "\xff"},
		&withField{ID: "x\xed\xa0\x80"}, // an encoded surrogate
		json.RawMessage("\"\xff\""),
		json.RawMessage(`"\ud800"`),
		json.RawMessage(`"\udc00x"`),
		json.RawMessage(`{"a":"\ud800\u0041"}`),
		json.RawMessage("{\"\xff\":1}"),
	}
	for _, v := range bad {
		if c, err := canonical(v); err == nil || !errors.Is(err, errInvalidUTF8) {
			t.Errorf("canonical(%#v) = %s, %v; want an invalid UTF-8 error", v, c, err)
		}
	}
	good := []any{"\ufffd", json.RawMessage(`"\ufffd"`), json.RawMessage("\"\ufffd\""), json.RawMessage(`"\ud83d\ude00"`), "é😀",
		struct {
			ID     string `json:"id"`
			hidden string
			Skip   string `json:"-"`
		}{"x", "\xff", "\xff"}}
	for _, v := range good {
		if _, err := canonical(v); err != nil {
			t.Errorf("canonical(%#v): %v", v, err)
		}
	}
	a, _ := canonical("\ufffd")
	b, _ := canonical(json.RawMessage(`"\ufffd"`))
	if string(a) != string(b) {
		t.Errorf("U+FFFD as a Go string %s and escaped %s differ", a, b)
	}
}
