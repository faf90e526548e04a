package ledger

import (
	"errors"
	"strings"
	"testing"
)

func TestNameRules(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"stripe": true, "acme.eu-1": true, "a_b": true, strings.Repeat("x", MaxStepName): true,
		"": false, "-x": false, ".x": false, "a/b": false, "a b": false, "a#b": false, strings.Repeat("x", MaxStepName+1): false, "é": false,
	} {
		if ValidName(s) != want || ValidStepName(s) != want {
			t.Errorf("%q: ValidName %v, ValidStepName %v, want %v", s, ValidName(s), ValidStepName(s), want)
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
	// Characters before size: the receiver answers each differently.
	if err := CheckType(strings.Repeat("t", MaxType) + "\x00"); !errors.Is(err, ErrText) {
		t.Errorf("a long type with a control character: %v, want ErrText", err)
	}
	if err := CheckType(strings.Repeat("t", MaxType+1)); err == nil || errors.Is(err, ErrText) {
		t.Errorf("a long type: %v, want an error without ErrText", err)
	}
}

// NewID checks every rule of an identity once: the characters (ErrText and
// ErrInvalid) before the sizes (ErrInvalid alone), so the receiver can answer
// each as it always has.
func TestNewID(t *testing.T) {
	t.Parallel()
	id, err := NewKey("stripe", "acme", "evt_1#x")
	if err != nil || id != (Key{Source: "stripe", Tenant: "acme", ID: "evt_1#x"}) {
		t.Fatalf("NewID = %+v, %v", id, err)
	}
	hashes := strings.Repeat("#", MaxPartLen)
	for _, tt := range []struct {
		name, source, tenant, key string
		text                      bool
	}{
		{"lone surrogate", "s", "t", "evt_\ufffd", true},
		{"non-character", "s", "t", "evt_\uffff", true},
		{"control character", "s", "t", "evt_\x01", true},
		{"invalid UTF-8", "s", "t", "evt_\xff", true},
		{"characters before size", "s", "t", strings.Repeat("k", MaxPartLen+1) + "\x01", true},
		{"empty key", "s", "t", "", false},
		{"empty tenant", "s", "", "k", false},
		{"part over MaxPartLen", "s", "t", strings.Repeat("k", MaxPartLen+1), false},
		{"encoded key over MaxPKBytes", hashes, hashes, "k", false},
	} {
		id, err := NewKey(tt.source, tt.tenant, tt.key)
		if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrText) != tt.text || id != (Key{}) {
			t.Errorf("%s: %+v, %v; want ErrInvalid, ErrText %v", tt.name, id, err, tt.text)
		}
	}
}
