package name

import (
	"strings"
	"testing"
)

func TestRules(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"stripe": true, "acme.eu-1": true, "a_b": true, strings.Repeat("x", 64): true,
		"": false, "-x": false, ".x": false, "a/b": false, "a b": false, "a#b": false, strings.Repeat("x", 65): false, "é": false,
	} {
		if Source(s) != want || Step(s) != want {
			t.Errorf("%q: Source %v, Step %v, want %v", s, Source(s), Step(s), want)
		}
	}
	for s, ok := range map[string]bool{
		"invoice.paid": true, "orders/create": true, "a\tb": true,
		"\xff": false, "\ufffd": false, "\uffff": false, "a\x00b": false, strings.Repeat("t", MaxType+1): false,
	} {
		if err := CheckType(s); (err == nil) != ok {
			t.Errorf("CheckType(%q) = %v, want ok %v", s, err, ok)
		}
	}
}
