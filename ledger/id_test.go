package ledger

import (
	"encoding/json"
	"testing"
)

func TestPKIsInjective(t *testing.T) {
	t.Parallel()
	ids := []ID{
		{"a#b", "c", "d"}, {"a", "b#c", "d"}, {"a", "b", "c#d"},
		{"a%23b", "c", "d"}, {"a%", "23b", "c"}, {"a", "b", "c"},
	}
	seen := map[string]ID{}
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
		id := ID{source, tenant, key}
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
		counts[shardOf(ID{"s", "t", string(rune(i))}.PK(), 16)]++
	}
	for shard, c := range counts {
		if c < 700 || c > 1300 {
			t.Errorf("shard %d got %d of 16000", shard, c)
		}
	}
}

func TestWithVersionStaysInSetClause(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"SET a = :a":             "SET a = :a, ver = ver + :one",
		"SET a = :a REMOVE b, c": "SET a = :a, ver = ver + :one REMOVE b, c",
	} {
		if got := withVersion(in); got != want {
			t.Errorf("withVersion(%q) = %q, want %q", in, got, want)
		}
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
	b, err := json.Marshal(Record{ID: ID{"stripe", "acme", "evt_1"}, Status: Done, Attempts: 1, Version: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"source":"stripe","tenant":"acme","event_key":"evt_1","status":"done","attempts":1,"reclaims":0,"version":3}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}
