package ledger

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/hookledger/hookledger/dynamo"
)

// MaxItemBytes is DynamoDB's item size limit (400 KB, attribute names
// included).
const MaxItemBytes = 400 * 1024

// MaxPayloadRef bounds a record's PayloadRef (an S3 object key is at most
// 1,024 bytes).
const MaxPayloadRef = 1024

// ErrTooLarge means a payload cannot be stored in one ledger item, even
// compressed.
var ErrTooLarge = errors.New("ledger: payload too large to store")

// payloadOverhead is what a payload item holds besides the body: the
// attribute names and the sort key, expiry, encoding and body digest
// values, rounded up.
const payloadOverhead = 160

// storedBody is the body as the payload item stores it (gzip when that is
// smaller) and its encoding ("" or "gzip"). PutPayload encodes the same way.
func storedBody(body []byte) ([]byte, string) {
	if z, ok := dynamo.Shrink(body, compressAbove); ok {
		return z, "gzip"
	}
	return body, ""
}

// CheckPayloadSize reports ErrTooLarge when PutPayload could not store body
// for id: DynamoDB refuses items over MaxItemBytes. Call it before writing
// anything for the event, so that no record is created whose payload can
// never be stored. Bodies that fit uncompressed cost no compression here.
func CheckPayloadSize(id Key, body []byte) error {
	limit := MaxItemBytes - payloadOverhead - len(id.PK()) - len(strconv.Itoa(MaxItemBytes))
	if len(body) <= limit {
		return nil
	}
	stored, _ := storedBody(body)
	if len(stored) > limit {
		return fmt.Errorf("%w: %d bytes, %d compressed; a ledger item holds at most %d", ErrTooLarge, len(body), len(stored), limit)
	}
	return nil
}
