package idempotency

import "time"

// Status is a record's place in its life: in progress while a caller holds
// the claim, completed once the result is stored, failed when the call
// returned an error (the next claim runs it again, counting attempts).
type Status string

// The statuses a Record can be in. The values are what the DynamoDB
// backend stores in the status attribute.
const (
	StatusInProgress Status = "processing"
	StatusCompleted  Status = "done"
	StatusFailed     Status = "failed"
)

// MaxKeyBytes bounds a stored key (a Backend may refuse longer ones with
// ErrInvalid), far below DynamoDB's 2048-byte partition key limit. KeyOf's
// keys are at most 193 bytes.
const MaxKeyBytes = 1024

// Record is a stored call as a Backend keeps it: status, attempts, claim
// token and lease, window, validation digest and result.
type Record struct {
	Key        string    `json:"key"`
	Status     Status    `json:"status"`
	Attempts   int       `json:"attempts"`             // claims that ran the call, this window
	LeaseOwner string    `json:"lease_owner"`          // the token of the last claim
	LeaseUntil time.Time `json:"lease_until,omitzero"` // while in progress
	CreatedAt  time.Time `json:"created_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	Validation string    `json:"validation,omitempty"` // digest of the validated payload
	Result     []byte    `json:"-"`                    // the stored result, decompressed (completed only)
	ResultSize int       `json:"result_size,omitempty"`
	StoredSize int       `json:"stored_size,omitempty"` // after compression
	// Unstored says why a completed call has no result: the result could
	// not be stored (too large, or it did not encode). The call ran once
	// anyway.
	Unstored  string `json:"unstored,omitempty"`
	LastError string `json:"last_error,omitempty"`
	Version   int64  `json:"version"`
}

// Expired reports whether the record's window has passed at now. A call in
// progress under a live lease is never expired, whatever its ExpiresAt
// says: its holder is still running it, and a claim that treated it as
// absent would run the call a second time beside it. (Claims set ExpiresAt
// no earlier than the lease end, so this matters for records written
// before they did, and for the last second that ExpiresAt, kept in whole
// seconds for TTL, could otherwise cut off.)
func (r Record) Expired(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt) && !r.leaseLive(now)
}

func (r Record) leaseLive(now time.Time) bool {
	return r.Status == StatusInProgress && now.Before(r.LeaseUntil)
}

// Claim is what a Backend's Claim writes.
type Claim struct {
	LeaseUntil  time.Time // when the claim lapses if the caller never finishes; after now
	ExpiresAt   time.Time // when the record's window ends; after now
	Validation  string    // optional digest stored for later payload checks
	MaxAttempts int       // a failed call with this many attempts is not run again; 0 = no limit
}

// Completion is what a Backend's Complete stores.
type Completion struct {
	// Data is the encoded result. The DynamoDB backend gzip-compresses it
	// when that is smaller (from 512 bytes), so a 3 KB JSON result usually
	// still costs one write unit.
	Data []byte
	// Unstored, when not empty, stores no data and records why (say, the
	// result did not encode). Data too large to store (over MaxResultBytes
	// after compression, or MaxResultDecodedBytes before) is recorded the
	// same way by Complete itself.
	Unstored string
	// ExpiresAt restarts the record's window from completion.
	ExpiresAt time.Time
}
