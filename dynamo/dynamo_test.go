package dynamo_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// TestCodecFormat pins the encodings the ledger's and the idempotency
// module's records are stored in: a change here would change both stored
// formats, which tables written by earlier versions must keep reading.
func TestCodecFormat(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 10, 0, 0, 123_000_000, time.FixedZone("CET", 3600))
	item := map[string]types.AttributeValue{"s": dynamo.S("processing"), "n": dynamo.N(-42), "ms": dynamo.Millis(at)}
	want := map[string]types.AttributeValue{
		"s":  &types.AttributeValueMemberS{Value: "processing"},
		"n":  &types.AttributeValueMemberN{Value: "-42"},
		"ms": &types.AttributeValueMemberN{Value: "1796288400123"},
	}
	if !reflect.DeepEqual(item, want) {
		t.Fatalf("encoded %#v, want %#v", item, want)
	}
	if got := dynamo.GetMillis(item, "ms"); !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("GetMillis = %v, want %v in UTC", got, at)
	}
	if dynamo.GetS(item, "s") != "processing" || dynamo.GetN(item, "n") != -42 {
		t.Errorf("GetS, GetN = %q, %d", dynamo.GetS(item, "s"), dynamo.GetN(item, "n"))
	}
	// Absent or of another type: the zero value, which decoders read as unset.
	if dynamo.GetS(item, "n") != "" || dynamo.GetN(item, "s") != 0 || !dynamo.GetMillis(item, "none").IsZero() {
		t.Error("an absent or mistyped attribute did not decode as zero")
	}
	if tok := dynamo.NewToken(); len(tok) != 32 || tok == dynamo.NewToken() {
		t.Errorf("token %q: want 32 hex digits, fresh each time", tok)
	}
}
