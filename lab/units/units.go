// DynamoDB's billing rules, as the write-unit accounting applies them (each
// cited where it is applied):
//
//   - Item size is the sum of attribute name and value sizes
//     (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
//   - A write costs 1 write unit per started KB of the larger of the item's
//     size before and after; a failed conditional write still costs units, on
//     the larger of the existing and the attempted item; a read costs 1 unit
//     per started 4 KB (strongly consistent), half that eventually consistent;
//     transactions cost double
//     (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
//   - A global secondary index costs a write when an item enters or leaves it,
//     and two when its index key changes (delete + put); a KEYS_ONLY index
//     costs nothing when only non-key attributes change
//     (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Writes).

package units

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/ledger"
)

// ItemSize is the size DynamoDB bills for item: for each attribute, its
// name's UTF-8 bytes plus its value's size.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return NumberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += NumberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3 // list overhead
		for _, e := range v.Value {
			n += 1 + valueSize(e) // 1 byte per element
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// NumberSize is a number's billed size: 1 byte per two significant digits
// (leading and trailing zeroes trimmed) plus 1 byte.
func NumberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	digits := strings.Replace(s, ".", "", 1)
	digits = strings.TrimLeft(digits, "0")
	digits = strings.TrimRight(digits, "0")
	return (len(digits)+1)/2 + 1
}

// WriteUnits is the write units of writing an item of size bytes: 1 per
// started KB, at least 1.
func WriteUnits(size int) float64 {
	return float64(max(1, (size+1023)/1024))
}

// ReadUnits is the read units of reading size bytes: 1 per started 4 KB
// (at least 1) when strongly consistent, half when eventually consistent.
func ReadUnits(size int, consistent bool) float64 {
	u := float64(max(1, (size+4095)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// IndexSpec describes a KEYS_ONLY global secondary index.
type IndexSpec struct {
	Name        string
	Hash, Range string // the index's key attributes (Range may be empty)
}

// TableSpec is what the unit rules need to know about a table.
type TableSpec struct {
	Keys    []string    // the table's key attributes
	Indexes []IndexSpec // KEYS_ONLY global secondary indexes
}

// LedgerTable is the ledger table's shape: its keys and its two sparse
// KEYS_ONLY indexes (ledger.TableInput).
var LedgerTable = TableSpec{Keys: []string{"pk", "sk"}, Indexes: []IndexSpec{
	{Name: ledger.DueIndex, Hash: "due_shard", Range: "due_at"},
	{Name: ledger.DeadIndex, Hash: "dead_shard", Range: "dead_at"},
}}

// Write is the units of one write.
type Write struct {
	Table float64 // table write units
	Index float64 // global secondary index write units
}

// WriteCost prices a successful write that turned before (nil when the item
// did not exist) into after (nil when it was deleted). tx doubles it.
func (t TableSpec) WriteCost(before, after map[string]types.AttributeValue, tx bool) Write {
	w := Write{Table: WriteUnits(max(ItemSize(before), ItemSize(after)))}
	for _, ix := range t.Indexes {
		inB, inA := ix.holds(before), ix.holds(after)
		switch {
		case !inB && inA:
			w.Index += WriteUnits(ItemSize(t.project(ix, after)))
		case inB && !inA:
			w.Index += WriteUnits(ItemSize(t.project(ix, before)))
		case inB && inA && !ix.sameKey(before, after):
			w.Index += WriteUnits(ItemSize(t.project(ix, before))) + WriteUnits(ItemSize(t.project(ix, after)))
		}
	}
	if tx {
		w.Table *= 2
		w.Index *= 2
	}
	return w
}

// FailedWriteCost prices a write whose condition failed: the larger of the
// existing and the attempted item, no index writes.
func FailedWriteCost(existing, attempted map[string]types.AttributeValue) Write {
	return Write{Table: WriteUnits(max(ItemSize(existing), ItemSize(attempted)))}
}

func (ix IndexSpec) holds(item map[string]types.AttributeValue) bool {
	if item == nil || item[ix.Hash] == nil {
		return false
	}
	return ix.Range == "" || item[ix.Range] != nil
}

func (ix IndexSpec) sameKey(a, b map[string]types.AttributeValue) bool {
	eq := func(name string) bool { return name == "" || scalar(a[name]) == scalar(b[name]) }
	return eq(ix.Hash) && eq(ix.Range)
}

func scalar(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S" + v.Value
	case *types.AttributeValueMemberN:
		return "N" + v.Value
	case *types.AttributeValueMemberB:
		return "B" + string(v.Value)
	}
	return ""
}

// project is the item as a KEYS_ONLY index stores it: the table's and the
// index's key attributes.
func (t TableSpec) project(ix IndexSpec, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	p := map[string]types.AttributeValue{}
	for _, k := range append(append([]string{}, t.Keys...), ix.Hash, ix.Range) {
		if v, ok := item[k]; ok && k != "" {
			p[k] = v
		}
	}
	return p
}
