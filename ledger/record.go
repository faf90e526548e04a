package ledger

import (
	"errors"
	"fmt"
	"time"
)

// Status is a record's place in the state machine (see the package doc).
type Status string

// The statuses a record can be in.
const (
	Received   Status = "received"
	Processing Status = "processing"
	Done       Status = "done"
	Failed     Status = "failed"
	Dead       Status = "dead"
)

// Terminal reports whether no ordinary transition leaves s.
func (s Status) Terminal() bool { return s == Done || s == Dead }

// Valid reports whether s is one of the five statuses.
func (s Status) Valid() bool {
	switch s {
	case Received, Processing, Done, Failed, Dead:
		return true
	}
	return false
}

// Record is an event's ledger record (never its payload). The package doc
// explains the run counters.
type Record struct {
	Key
	EventType string `json:"event_type,omitempty"`
	Status    Status `json:"status"`
	Attempts  int    `json:"attempts"` // runs begun (the handler's Event.Attempt)
	Failures  int    `json:"failures"` // runs the handler failed (Fail, and the Bury that ends it); MaxAttempts bounds them
	Reclaims  int    `json:"reclaims"` // re-drives by the reclaimer (its backoff grows with them)
	// Interrupted counts runs that ended without the handler's answer,
	// the run in progress included.
	Interrupted int `json:"interrupted"`
	// GivenBack counts the interrupted runs given back before the handler
	// ran (Release).
	GivenBack int `json:"given_back,omitempty"`

	LeaseOwner string    `json:"lease_owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	LastError  string    `json:"last_error,omitempty"`
	ReplayedAt time.Time `json:"replayed_at,omitzero"` // the operator's last replay (zero: never)
	BodySHA256 string    `json:"body_sha256,omitempty"`
	DueShard   int       `json:"due_shard,omitempty"`
	DueAt      time.Time `json:"due_at,omitzero"` // a done record keeps its last; zero once dead
	Version    int64     `json:"version"`         // incremented by every write
	// Steps is what the handler recorded of its named steps (see Step).
	Steps map[string]Step `json:"steps,omitempty"`
	// Runs are the last few runs of the handler, oldest first (see Run).
	Runs []Run `json:"runs,omitempty"`
	// PayloadRef is the payload store's (S3) object key when the body is
	// kept there, written by the receiver before answering. Empty: the
	// payload item holds it.
	PayloadRef string `json:"payload_ref,omitempty"`
	// Skipped says why the event was marked done without its handler
	// running (Ledger.Skip: it was stale). Empty otherwise.
	Skipped string `json:"skipped,omitempty"`
	// ApplyStale is the ReplayedAt of a replay that asked to apply the
	// event even if stale (see AppliesStale).
	ApplyStale time.Time `json:"apply_stale,omitzero"`
	// Format is the record format of the code that last wrote it (see
	// Format), and Release that code's hookledger version ("" before 0.1.0).
	Format  int    `json:"format,omitempty"`
	Release string `json:"release,omitempty"`

	// Trace is the X-Ray trace header of the event's first delivery, which
	// every re-send of the event carries (Create; empty before it existed).
	Trace string `json:"trace,omitempty"`

	creator string // the request token of the Create that wrote it
	writer  string // the request token of the last reclaimer transition or Replay
}

// Identity is what a queue message says its event is: the type and body
// digest the receiver recorded. A message whose identity is not its
// record's is never applied (ClaimEvent, EnsurePayload). A key can be used
// again once its record expired, and an earlier event's message (the
// dead-letter queue keeps it 14 days) then names the newer record.
type Identity struct {
	Type       string
	BodySHA256 string
}

// Identity is the record's own.
func (r Record) Identity() Identity { return Identity{Type: r.EventType, BodySHA256: r.BodySHA256} }

// Mismatch says how an event with identity ev differs from the record's
// own, or "" when it is the record's event. The types must be equal (both
// may be empty). So must the digests, except that a record without one
// (older than digests) takes any. identityCond is the same rule.
func (r Record) Mismatch(ev Identity) string {
	switch {
	case r.BodySHA256 != "" && ev.BodySHA256 == "":
		return "the message carries no body digest"
	case r.BodySHA256 != "" && ev.BodySHA256 != r.BodySHA256:
		return "body digest differs"
	case ev.Type != r.EventType:
		return "event type differs"
	}
	return ""
}

// Expired reports whether the record is past its retention at now.
func (r Record) Expired(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
}

// LeaseLive reports whether a lease still bars claims at now: a processing
// record's, or the end a failed record kept for a started step (Fail).
func (r Record) LeaseLive(now time.Time) bool {
	return !r.Status.Terminal() && now.Before(r.LeaseUntil)
}

// Sentinel errors. Callers branch on them with errors.Is; the ledger wraps
// them with what failed.
var (
	// ErrNotFound: no record for the identity, or only an expired one.
	ErrNotFound = errors.New("ledger: record not found")
	// ErrLeaseLost: the caller's token no longer owns a live lease.
	ErrLeaseLost = errors.New("ledger: lease lost")
	// ErrLeased: another worker holds a live lease.
	ErrLeased = errors.New("ledger: leased by another worker")
	// ErrTerminal: the record is done or dead.
	ErrTerminal = errors.New("ledger: record is terminal")
	// ErrNotThisEvent: the record under the key is another event than the
	// caller's message names (see Identity). Nothing was written.
	ErrNotThisEvent = errors.New("ledger: not the event the record holds under this key")
	// ErrConflict: the record changed since it was read (reclaimer race).
	ErrConflict = errors.New("ledger: record changed concurrently")
	// ErrInvalid: the caller passed something the ledger cannot store.
	ErrInvalid = errors.New("ledger: invalid argument")
	// ErrUnavailable: DynamoDB throttled, failed or could not be reached;
	// the operation may or may not have taken effect.
	ErrUnavailable = errors.New("ledger: unavailable")
)

// StateError is returned with ErrLeaseLost, ErrLeased, ErrTerminal,
// ErrNotThisEvent and ErrConflict. It carries the record that refused the
// write, so callers need no extra read.
type StateError struct {
	Op     string
	Err    error
	Record Record
}

func (e *StateError) Error() string {
	return fmt.Sprintf("%s %s: %v (status %s)", e.Op, e.Record.Key, e.Err, e.Record.Status)
}

func (e *StateError) Unwrap() error { return e.Err }
