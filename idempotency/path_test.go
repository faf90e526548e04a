package idempotency

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestPathSelects(t *testing.T) {
	t.Parallel()
	doc := `{"body":"{\"order_id\":\"o-1\",\"lines\":[{\"sku\":\"a\"},{\"sku\":\"b\"}]}",
		"headers":{"idempotency-key":"k-1","x.y":"dotted"},
		"Records":[{"messageId":"m-1","body":"plain text"}],
		"n":0,"f":false,"nul":null,"dup":1,"dup":2,
		"esc\"aped":"e"}`
	tests := []struct{ path, want string }{
		{"body.order_id", `"o-1"`},
		{"body.lines[1].sku", `"b"`},
		{"body.lines", `[{"sku":"a"},{"sku":"b"}]`},
		{"headers.idempotency-key", `"k-1"`},
		{`headers."x.y"`, `"dotted"`},
		{"Records[0].messageId", `"m-1"`},
		{"$.Records[0].messageId", `"m-1"`},
		{"n", `0`},
		{"f", `false`},
		{"nul", `null`},
		{"dup", `2`},
		{`"esc\"aped"`, `"e"`},
		{"missing", `null`},
		{"headers.missing.deeper", `null`},
		{"Records[5]", `null`},
		{"n.x", `null`},
		{"body.order_id, headers.idempotency-key", `["o-1","k-1"]`},
		{"body.nope, missing", `[null,null]`},
	}
	for _, tt := range tests {
		ps, err := parsePaths(tt.path)
		if err != nil {
			t.Errorf("parse %q: %v", tt.path, err)
			continue
		}
		got, err := ps.selectCanonical([]byte(doc))
		if err != nil || string(got) != tt.want {
			t.Errorf("%q selects %s (%v), want %s", tt.path, got, err, tt.want)
		}
	}
	whole, _ := parsePaths("$")
	if got, _ := whole.selectCanonical([]byte(`{"b":1, "a":[1.0]}`)); string(got) != `{"a":[1],"b":1}` {
		t.Errorf("$ selects %s", got)
	}
	// A path that goes inside a string that is not JSON is an error, not a
	// silent null (a base64 body needs a Key function).
	ps, _ := parsePaths("Records[0].body.order")
	if _, err := ps.selectCanonical([]byte(doc)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("path into plain text: %v", err)
	}
}

// A REST API (payload 1.0) passes header names in the client's case; the
// documented "headers.idempotency-key" must find them. Only header names
// fold: a body field keeps its exact name.
func TestPathHeaderCase(t *testing.T) {
	t.Parallel()
	v1, err := json.Marshal(events.APIGatewayProxyRequest{
		Headers:           map[string]string{"Idempotency-Key": "k-1", "X-Both": "folded"},
		MultiValueHeaders: map[string][]string{"Idempotency-Key": {"k-1"}},
		Body:              `{"Order":"o-1","order_id":"o-2"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	// An exact spelling wins over one that differs only in case, wherever
	// it comes in the object.
	both := `{"headers":{"x-both":"exact","X-BOTH":"folded"},"nested":{"headers":{"Idempotency-Key":"n"}}}`
	tests := []struct{ doc, path, want string }{
		{string(v1), "headers.idempotency-key", `"k-1"`},
		{string(v1), "headers.IDEMPOTENCY-KEY", `"k-1"`},
		{string(v1), "$.headers.idempotency-key", `"k-1"`},
		{string(v1), "multiValueHeaders.idempotency-key[0]", `"k-1"`},
		{string(v1), "body.order", `null`},
		{string(v1), "body.Order", `"o-1"`},
		{string(v1), "Headers.idempotency-key", `null`},
		{both, "headers.x-both", `"exact"`},
		{both, "nested.headers.idempotency-key", `null`},
		{`{"headers":{"Idempotency-\u004bey":"escaped"}}`, "headers.idempotency-key", `"escaped"`},
		{`{"headers":{"\u212a":"kelvin"}}`, "headers.k", `null`},
	}
	for _, tt := range tests {
		ps, err := parsePaths(tt.path)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.path, err)
		}
		got, err := ps.selectCanonical([]byte(tt.doc))
		if err != nil || string(got) != tt.want {
			t.Errorf("%q over %.60s... selects %s (%v), want %s", tt.path, tt.doc, got, err, tt.want)
		}
	}
}

func TestPathSyntaxErrors(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", " ", "a..b", "a.", "a[", "a[x]", "a[-1]", `"open`, "a b", "a,", ",a", "$x", "a]"} {
		if _, err := parsePaths(p); err == nil {
			t.Errorf("%q parsed", p)
		}
	}
}

func FuzzPathSelect(f *testing.F) {
	f.Add("body.order_id", `{"body":"{\"order_id\":1}"}`)
	f.Add("a[0].b", `{"a":[{"b":[1,{"c":"}"}]}]}`)
	f.Add("a.b", `{"a":{"b" 1}}`)
	f.Add("a[1]", `{"a":[1:2,3]`)
	f.Add("a.b", `{"a":"{\"b\":"}`)
	f.Add("headers.x-key", `{"headers":{"X-Key":1,"x-k\u0065y":2,"`)
	f.Fuzz(func(t *testing.T, path, doc string) {
		ps, err := parsePaths(path)
		if err != nil {
			return
		}
		// Any text, JSON or not: no panic, no hang, and a selection that
		// comes back is valid canonical JSON.
		got, err := ps.selectCanonical([]byte(doc))
		if err == nil && !jsonValid(string(got)) {
			t.Fatalf("%q over %q selected invalid %q", path, doc, got)
		}
	})
}
