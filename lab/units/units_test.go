package units

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func TestItemSizeFollowsTheDocumentedRules(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"string", map[string]types.AttributeValue{"pk": s("abc")}, 2 + 3},
		{"number 12345 is 3 digit pairs + 1", map[string]types.AttributeValue{"n": n("12345")}, 1 + 3 + 1},
		{"trailing zeroes trimmed", map[string]types.AttributeValue{"n": n("1000")}, 1 + 1 + 1},
		{"binary counts raw bytes", map[string]types.AttributeValue{"b": &types.AttributeValueMemberB{Value: make([]byte, 100)}}, 1 + 100},
		{"bool", map[string]types.AttributeValue{"ok": &types.AttributeValueMemberBOOL{Value: true}}, 2 + 1},
		{"map: 3 + per element 1 + name + value", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": s("xy")}}}, 1 + 3 + 1 + 1 + 2},
		{"list", map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x"), s("yz")}}}, 1 + 3 + (1 + 1) + (1 + 2)},
	}
	for _, c := range cases {
		if got := ItemSize(c.item); got != c.want {
			t.Errorf("%s: size %d, want %d", c.name, got, c.want)
		}
	}
}

func TestUnits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		size int
		w    float64
	}{{0, 1}, {1, 1}, {1024, 1}, {1025, 2}, {102400, 100}} {
		if got := WriteUnits(c.size); got != c.w {
			t.Errorf("WriteUnits(%d) = %v, want %v", c.size, got, c.w)
		}
	}
	if got := ReadUnits(4097, true); got != 2 {
		t.Errorf("consistent read of 4097 B = %v, want 2", got)
	}
	if got := ReadUnits(10, false); got != 0.5 {
		t.Errorf("eventual read of 10 B = %v, want 0.5", got)
	}
	if got := SQSRequests(65537); got != 2 {
		t.Errorf("SQS 64 KB + 1 = %v requests, want 2", got)
	}
}

func TestWriteCostIndexAndUpdateRules(t *testing.T) {
	t.Parallel()
	tbl := TableSpec{Keys: []string{"pk", "sk"}, Indexes: []IndexSpec{{Name: "due", Hash: "due_shard", Range: "due_at"}}}
	big := s(strings.Repeat("x", 3000))
	base := func(extra map[string]types.AttributeValue) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{"pk": s("ev#a"), "sk": s("r")}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	due := map[string]types.AttributeValue{"due_shard": n("3"), "due_at": n("1000")}
	cases := []struct {
		name          string
		before, after map[string]types.AttributeValue
		tx            bool
		want          Write
	}{
		{"put entering the index", nil, base(due), false, Write{1, 1}},
		{"update outside the index keys", base(due), base(map[string]types.AttributeValue{"due_shard": n("3"), "due_at": n("1000"), "status": s("x")}), false, Write{1, 0}},
		{"leaving the index", base(due), base(nil), false, Write{1, 1}},
		{"index key changed: delete + put", base(due), base(map[string]types.AttributeValue{"due_shard": n("3"), "due_at": n("2000")}), false, Write{1, 2}},
		{"update billed on the larger of before and after", base(map[string]types.AttributeValue{"body": big}), base(map[string]types.AttributeValue{"body": big, "st": s("done")}), false, Write{3, 0}},
		{"transaction doubles", nil, base(due), true, Write{2, 2}},
	}
	for _, c := range cases {
		if got := tbl.WriteCost(c.before, c.after, c.tx); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := FailedWriteCost(base(map[string]types.AttributeValue{"body": big}), base(nil)); got.Table != 3 || got.Index != 0 {
		t.Errorf("failed write on a 3 KB item: %+v, want 3 table units", got)
	}
}
