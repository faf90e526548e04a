package jsoncheck

import (
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
