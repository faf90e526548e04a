package ledger

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPKIsInjective(t *testing.T) {
	t.Parallel()
	ids := []Key{
		{"a#b", "c", "d"}, {"a", "b#c", "d"}, {"a", "b", "c#d"},
		{"a%23b", "c", "d"}, {"a%", "23b", "c"}, {"a", "b", "c"},
	}
	seen := map[string]Key{}
	for _, id := range ids {
		pk := id.PK()
		if prev, ok := seen[pk]; ok {
			t.Errorf("%+v and %+v share key %q", prev, id, pk)
		}
		seen[pk] = id
		back, err := ParsePK(pk)
		if err != nil || back != id {
			t.Errorf("ParsePK(%q) = %+v, %v; want %+v", pk, back, err, id)
		}
	}
}

func FuzzPKRoundTrip(f *testing.F) {
	f.Add("stripe", "acme", "evt_1")
	f.Add("a#", "%23", "#%")
	f.Fuzz(func(t *testing.T, source, tenant, key string) {
		id := Key{source, tenant, key}
		back, err := ParsePK(id.PK())
		if err != nil || back != id {
			t.Fatalf("round trip %+v -> %q -> %+v, %v", id, id.PK(), back, err)
		}
	})
}

func TestShardSpread(t *testing.T) {
	t.Parallel()
	counts := make([]int, 16)
	for i := range 16000 {
		counts[shardOf(Key{"s", "t", string(rune(i))}.PK(), 16)]++
	}
	for shard, c := range counts {
		if c < 700 || c > 1300 {
			t.Errorf("shard %d got %d of 16000", shard, c)
		}
	}
}

func TestExpressionKeepsSetBeforeRemove(t *testing.T) {
	t.Parallel()
	// MiniStack accepted "REMOVE a, b, ver = ver + :one" and treated ver as
	// removed; DynamoDB rejects it. Every assignment stays in the SET clause,
	// steps included, and every removal in the one REMOVE clause.
	p := parts([]string{"a = :a"}, []string{"b"}, nil)
	if err := p.addSteps([]StepChange{{Name: "charge", Status: StepDone, Result: "ch_1"}, {Name: "notify"}}, time.Unix(1, 0), nil); err != nil {
		t.Fatal(err)
	}
	p.set = append(p.set, "ver = ver + :one")
	want := "SET a = :a, #s0 = :s0, ver = ver + :one REMOVE b, #s1"
	if got := p.String(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if p.names["#s0"] != "step#charge" || p.names["#s1"] != "step#notify" {
		t.Fatalf("names %v", p.names)
	}
}

func TestStepChangeLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []StepChange{
		{Name: "", Status: StepDone},
		{Name: "has space", Status: StepDone},
		{Name: strings.Repeat("x", MaxStepName+1), Status: StepDone},
		{Name: "ok", Status: "maybe"},
		{Name: "ok", Status: StepDone, Result: strings.Repeat("r", MaxStepResult+1)},
	} {
		if err := c.validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", c, err)
		}
	}
	if err := (StepChange{Name: "charge.v2", Status: StepDone, Result: strings.Repeat("r", MaxStepResult)}).validate(); err != nil {
		t.Error(err)
	}
}

func TestUsesMatchesWholePlaceholders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr, p string
		want    bool
	}{
		{"a = :now", ":now", true},
		{"a = :nows", ":now", false},
		{"a = :nows AND b = :now)", ":now", true},
		{"#st = :x", "#st", true},
		{"#status = :x", "#st", false},
	} {
		if got := uses(tc.expr, tc.p); got != tc.want {
			t.Errorf("uses(%q, %q) = %v", tc.expr, tc.p, got)
		}
	}
}

func TestRecordJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Record{Key: Key{"stripe", "acme", "evt_1"}, Status: Done, Attempts: 1, Version: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"source":"stripe","tenant":"acme","event_id":"evt_1","status":"done","attempts":1,"failures":0,"reclaims":0,"interrupted":0,"version":3}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}
