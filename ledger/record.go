package ledger

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
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

// MaxPartLen bounds each of source, tenant and key.
const MaxPartLen = 512

// MaxPKBytes is DynamoDB's limit on a partition key value. Escaping can
// triple a part ("#" is stored as "%23"), so three parts within MaxPartLen
// can still exceed it; Validate checks the encoded key too.
const MaxPKBytes = 2048

// Key is an event's identity: who sent it (source), for whom (tenant), and the
// sender's event id or a derived key. NewID makes one from a delivery.
type Key struct {
	Source string `json:"source"`
	Tenant string `json:"tenant"`
	ID     string `json:"event_id"`
}

// NewKey is the door of a new event's identity: it checks every rule the
// ledger, the queue and the logs need of the three parts, once, and returns
// their ID. Its errors wrap ErrInvalid, and also ErrText when a part has
// characters the pipeline cannot carry (CheckText), which it checks before
// the sizes (Validate). Source and tenant are names the sources config
// accepted (ValidName).
func NewKey(source, tenant, key string) (Key, error) {
	id := Key{Source: source, Tenant: tenant, ID: key}
	for _, p := range id.parts() {
		if err := CheckText(p.v); err != nil {
			return Key{}, fmt.Errorf("%w: %s: %w", ErrInvalid, p.name, err)
		}
	}
	if err := id.Validate(); err != nil {
		return Key{}, err
	}
	return id, nil
}

// Validate is the guard for an ID built by hand (a literal, a command's
// arguments): it reports an empty or over-long part, a part that is not
// valid UTF-8 (the SDK would send U+FFFD in its place, so two ids would
// share one record), and an encoded partition key over DynamoDB's
// MaxPKBytes. NewID checks all of it, and more.
func (id Key) Validate() error { return id.check(id.PK()) }

// check is Validate for a caller that has encoded pk already.
func (id Key) check(pk string) error {
	for _, p := range id.parts() {
		if p.v == "" {
			return fmt.Errorf("%w: %s is empty", ErrInvalid, p.name)
		}
		if len(p.v) > MaxPartLen {
			return fmt.Errorf("%w: %s is %d bytes, over %d", ErrInvalid, p.name, len(p.v), MaxPartLen)
		}
		if !utf8.ValidString(p.v) {
			return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, p.name)
		}
	}
	if len(pk) > MaxPKBytes {
		return fmt.Errorf("%w: encoded key is %d bytes, over DynamoDB's %d-byte partition key limit", ErrInvalid, len(pk), MaxPKBytes)
	}
	return nil
}

func (id Key) parts() [3]struct{ name, v string } {
	return [3]struct{ name, v string }{{"source", id.Source}, {"tenant", id.Tenant}, {"key", id.ID}}
}

// String is the identity as logged: source/tenant/key.
func (id Key) String() string { return id.Source + "/" + id.Tenant + "/" + id.ID }

// PK is the stored partition key: "ev#", then source, tenant and key, each
// escaped ("%" as "%25", "#" as "%23") and joined by "#", so no two
// identities share one. Downstream idempotency keys derive from it
// (hookledger.IdempotencyKey), so it never changes: keys of events already
// processed must stay the same.
func (id Key) PK() string {
	return "ev#" + escape(id.Source) + "#" + escape(id.Tenant) + "#" + escape(id.ID)
}

// ParsePK inverts ID.PK.
func ParsePK(pk string) (Key, error) {
	rest, ok := strings.CutPrefix(pk, "ev#")
	parts := strings.Split(rest, "#")
	if !ok || len(parts) != 3 {
		return Key{}, fmt.Errorf("%w: %q is not a ledger key", ErrInvalid, pk)
	}
	return Key{Source: unescaper.Replace(parts[0]), Tenant: unescaper.Replace(parts[1]), ID: unescaper.Replace(parts[2])}, nil
}

// shardOf spreads records over the due index's partitions.
func shardOf(pk string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(pk))
	return int(h.Sum32() % uint32(shards))
}

// Record is an event's ledger record (never its payload).
type Record struct {
	Key
	EventType string `json:"event_type,omitempty"`
	Status    Status `json:"status"`
	Attempts  int    `json:"attempts"` // runs begun: how many times a worker claimed it (the handler's Event.Attempt)
	Failures  int    `json:"failures"` // runs the handler failed (Fail; the Bury that ends the event counts too); MaxAttempts bounds them
	Reclaims  int    `json:"reclaims"` // how many times the reclaimer re-drove it (its backoff grows with them)
	// Interrupted is how many runs ended without the handler's answer: the
	// worker crashed, timed out or lost its lease, or the ledger, the queue
	// or the payload store failed the run. A claim counts its run here and
	// the run's answer (Complete, Fail, Bury) takes it back, so the run in
	// progress counts while the record is processing. Interruptions are
	// bounded by time, not by a count (see the package doc).
	Interrupted int `json:"interrupted"`
	// GivenBack is how many of the interrupted runs were given back before
	// the handler ran (Release: the event's resource was busy, its body
	// could not be read).
	GivenBack int `json:"given_back,omitempty"`

	LeaseOwner string    `json:"lease_owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	LastError  string    `json:"last_error,omitempty"`
	ReplayedAt time.Time `json:"replayed_at,omitzero"` // when an operator last replayed it (zero: never)
	BodySHA256 string    `json:"body_sha256,omitempty"`
	DueShard   int       `json:"due_shard,omitempty"`
	DueAt      time.Time `json:"due_at,omitzero"` // a done record keeps its last; zero once dead
	Version    int64     `json:"version"`         // incremented by every write
	// Steps is what the event's handler recorded of its named steps (see
	// Step); absent for handlers that use none.
	Steps map[string]Step `json:"steps,omitempty"`
	// PayloadRef names where the body is kept when it is not in the
	// ledger's payload item: the key of an object in the payload store
	// (an S3 bucket) that the receiver wrote before answering. Empty: the
	// payload item holds it.
	PayloadRef string `json:"payload_ref,omitempty"`
	// Skipped says why the event was marked done without its handler
	// running (Ledger.Skip): it was stale, older than a state of its
	// resource that a newer event applied. Empty for every other record.
	Skipped string `json:"skipped,omitempty"`
	// ApplyStale is the ReplayedAt of the replay that asked for the event
	// to be applied even if stale (Ledger.ReplayApplyStale); see
	// AppliesStale.
	ApplyStale time.Time `json:"apply_stale,omitzero"`

	creator string // the request token of the Create that wrote it
	writer  string // the request token of the last reclaimer transition or Replay
}

// Identity is what a queue message says its event is: the type and the body
// digest the receiver recorded. The record is the one source of both, and a
// message whose identity is not its record's is never applied (ClaimEvent,
// EnsurePayload): a key can be used again once its record expired, and an
// earlier event's message (the dead-letter queue keeps messages 14 days)
// or a duplicate with another unsigned type header then names the newer
// record.
type Identity struct {
	Type       string
	BodySHA256 string
}

// Identity is the record's own.
func (r Record) Identity() Identity { return Identity{Type: r.EventType, BodySHA256: r.BodySHA256} }

// Mismatch says how an event with identity ev differs from the record's
// own, or "" when it is the record's event. The types must be equal (both
// may be empty: some schemes have none). The digests must be equal too: a
// message without one is never the event of a record with one; only a
// record without a digest (written before digests were kept) takes any.
// The claim's condition expression (identityCond) is the same rule.
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

// AppliesStale reports whether the record's current replay asked for the
// event to be applied even if stale: a later plain replay forgets it.
func (r Record) AppliesStale() bool {
	return !r.ApplyStale.IsZero() && r.ApplyStale.Equal(r.ReplayedAt)
}

// EarlierRun says what the record shows of earlier runs that may have
// reached the handler, and so applied some of its effects: steps recorded
// (done, or started and not done), runs the handler failed, runs
// interrupted after the point where a run is given back. "" when it shows
// none: every earlier run was given back, or there was none. The run in
// progress (a processing record's) is not an earlier one.
func (r Record) EarlierRun() string {
	var what []string
	names := slices.Sorted(maps.Keys(r.Steps))
	for _, name := range names {
		what = append(what, fmt.Sprintf("step %s %s", name, r.Steps[name].Status))
	}
	if r.Failures > 0 {
		what = append(what, count(r.Failures, "run")+" failed by the handler")
	}
	n := r.Interrupted - r.GivenBack
	if r.Status == Processing {
		n--
	}
	if n > 0 {
		what = append(what, count(n, "run")+" interrupted")
	}
	return strings.Join(what, ", ")
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Expired reports whether the record is past its retention at now.
func (r Record) Expired(now time.Time) bool {
	return !r.ExpiresAt.IsZero() && !now.Before(r.ExpiresAt)
}

// Since is when the record's time for retries started: its creation, or
// the operator's last replay.
func (r Record) Since() time.Time {
	if r.ReplayedAt.After(r.CreatedAt) {
		return r.ReplayedAt
	}
	return r.CreatedAt
}

// LeaseLive reports whether a lease still bars claims at now: a processing
// record's, or the end a failed (or then replayed) record kept because a
// step was left started (see Ledger.Fail).
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
	// caller's message names (see Identity): its body digest or type
	// differs. Nothing was written.
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
// ErrNotThisEvent and ErrConflict. It carries the record as it was when the write was refused,
// so callers need no extra read.
type StateError struct {
	Op     string
	Err    error
	Record Record
}

func (e *StateError) Error() string {
	return fmt.Sprintf("%s %s: %v (status %s)", e.Op, e.Record.Key, e.Err, e.Record.Status)
}

func (e *StateError) Unwrap() error { return e.Err }
