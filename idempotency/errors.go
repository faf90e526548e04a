package idempotency

import (
	"errors"
	"fmt"
)

// Errors a caller branches on with errors.Is. Every error this package
// returns is wrapped with the operation and, where there is one, the key.
var (
	// ErrInProgress: another invocation holds the key's claim and did not
	// finish within the wait (Config.Wait; none by default). Retryable: the
	// claim ends with that invocation's deadline at the latest.
	ErrInProgress = errors.New("idempotency: call already in progress")
	// ErrPayloadMismatch: the key was used before with a payload whose
	// validated fields differ (Config.Validate, Config.ValidatePath). Not
	// retryable; the stored record is left as it was.
	ErrPayloadMismatch = errors.New("idempotency: payload differs from the one first seen with this key")
	// ErrNoKey: the input has no key (nothing selected, null, "", [] or {})
	// and Config.OptionalKey is false. Nothing was stored or run.
	ErrNoKey = errors.New("idempotency: no idempotency key in the input")
	// ErrBadInput: the key or validation fields could not be taken from
	// the input (a path into a string that is not JSON, a Key function's
	// error, a value that does not encode as JSON). Nothing was stored or
	// run; answer it as a client error.
	ErrBadInput = errors.New("idempotency: cannot take the key from the input")
	// ErrAttemptsExhausted: the call failed Options.MaxAttempts times in its
	// window and is not run again until the window ends (or Forget).
	ErrAttemptsExhausted = errors.New("idempotency: attempts exhausted")
	// ErrUnstorable: the call ran but its result could not be stored; see
	// UnstorableError.
	ErrUnstorable = errors.New("idempotency: result cannot be stored")
	// ErrResultTooLarge: the result is over MaxResultBytes after
	// compression. Matches UnstorableError values whose cause is size.
	ErrResultTooLarge = errors.New("idempotency: result too large to store")
	// ErrInvalid: a configuration or argument this package cannot use (a
	// Backend returns it for a key it cannot store, say over MaxKeyBytes).
	ErrInvalid = errors.New("idempotency: invalid configuration")
)

// ErrCorruptResult: the stored record of the key cannot be read back (a
// result that does not decompress, or decompresses past
// MaxResultDecodedBytes, or that does not decode into the function's
// result type any more). The function did not run. Not retryable until
// the record's window ends or Store.Forget.
var ErrCorruptResult = errors.New("idempotency: stored result does not decode")

// Errors a Backend returns, and the DynamoDB backend's; a Backend of your
// own wraps these (the conformance suite checks it), so that the store and
// its callers branch on one set.
var (
	// ErrNotFound: Backend.Get found no record, or only an expired one.
	ErrNotFound = errors.New("idempotency: record not found")
	// ErrLeaseLost: Backend.Complete or Fail found the claim taken over.
	ErrLeaseLost = errors.New("idempotency: claim taken over")
	// ErrUnavailable: the store throttled, failed or could not be reached
	// (the request may or may not have taken effect), or (with
	// ErrConflict) other claims kept changing the record while this one
	// tried to claim it. Retryable.
	ErrUnavailable = errors.New("idempotency: store unavailable")
	// ErrConflict comes with ErrUnavailable when a claim gave up because
	// other claims kept changing the record under it.
	ErrConflict = errors.New("idempotency: record changed concurrently")
)

// MaxResultBytes is the largest result stored, after compression
// (results of 512 bytes and more are gzip'd when that is smaller):
// DynamoDB's 400 KB item limit less 4 KB kept for the record's own
// attributes (key, status, lease, counters, validation digest, error).
const MaxResultBytes = 400*1024 - 4*1024

// MaxResultDecodedBytes is the largest result stored before compression
// (8 MiB): a stored result is decompressed with this bound when it is
// read (a bound against decompression bombs), so a larger one, however
// well it compresses, could be stored but never read back, and is
// unstorable.
const MaxResultDecodedBytes = 8 << 20

// UnstorableError is returned when a call's result cannot be stored: over
// MaxResultBytes after compression or over MaxResultDecodedBytes before
// it, or not encodable as JSON. The call ran
// exactly once: its record is marked done without a result, and repeats
// return this error too (Replayed is then true) instead of running the
// call again, until the record expires or is forgotten.
type UnstorableError struct {
	Operation string
	Key       string
	Reason    string // what the store recorded
	Size      int    // the encoded result's bytes (0 when it did not encode)
	Stored    int    // after compression
	Limit     int    // MaxResultBytes
	Replayed  bool   // reported from the record by a repeat
}

// Error names the call, the sizes and the limit, and what to do.
func (e *UnstorableError) Error() string {
	who := "ran; its result"
	if e.Replayed {
		who = "ran earlier; its result"
	}
	if e.Size > MaxResultDecodedBytes {
		return fmt.Sprintf("idempotency %s: call %s %s was not stored: %d bytes is over the %d-byte limit of a result before compression; return a smaller result (an id to fetch the rest by) or store it elsewhere",
			e.Operation, e.Key, who, e.Size, MaxResultDecodedBytes)
	}
	if e.tooLarge() {
		return fmt.Sprintf("idempotency %s: call %s %s was not stored: %d bytes (%d after compression) is over the %d-byte limit of a DynamoDB item; return a smaller result (an id to fetch the rest by) or store it elsewhere",
			e.Operation, e.Key, who, e.Size, e.Stored, e.Limit)
	}
	return fmt.Sprintf("idempotency %s: call %s %s was not stored: %s", e.Operation, e.Key, who, e.Reason)
}

func (e *UnstorableError) tooLarge() bool {
	return (e.Limit > 0 && e.Stored > e.Limit) || e.Size > MaxResultDecodedBytes
}

// Is matches ErrUnstorable, and ErrResultTooLarge when size was the cause.
func (e *UnstorableError) Is(target error) bool {
	return target == ErrUnstorable || (target == ErrResultTooLarge && e.tooLarge())
}
