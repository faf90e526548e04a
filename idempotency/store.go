package idempotency

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults for Options' zero values.
const (
	// DefaultExpiry is how long a result is replayed (Powertools' default).
	DefaultExpiry = time.Hour
	// DefaultNoDeadlineLease is the claim's length when the context carries
	// no deadline (outside Lambda): Lambda's longest timeout.
	DefaultNoDeadlineLease = 15 * time.Minute
	// DefaultLeaseMargin is how long a claim outlasts the context's deadline
	// by default: the time the completion (or failure) write may still take
	// after the deadline, so that no one takes the key over while the
	// holder is storing its result.
	DefaultLeaseMargin = 5 * time.Second
	// DefaultCacheBytes bounds the local cache when only its entries are set.
	DefaultCacheBytes = 1 << 20
	// DefaultMetricsNamespace is the CloudWatch namespace of the metrics.
	DefaultMetricsNamespace = "hookledger"
)

// Backend stores records. NewStore uses DynamoDB; package
// idempotencytest has an in-memory one with the same semantics, and the
// conformance suite (conformance_test.go) runs against both. A backend of
// your own must pass it too, and return this package's errors
// (ErrNotFound, ErrLeaseLost, ErrUnavailable, ErrInvalid) wrapped.
type Backend interface {
	// Claim claims key atomically: it succeeds (claimed, the returned
	// record's LeaseOwner is the new token) when there is no record, the
	// record has expired, its lease has lapsed, or it failed with attempts
	// left (attempts then counts on). Otherwise it returns the record in
	// the way, unchanged. A record in progress under a live lease has not
	// expired, whatever its ExpiresAt; the claim's ExpiresAt is stored no
	// earlier than its LeaseUntil (whole seconds, rounded up). Taking over a
	// lapsed or failed record whose Validation differs from the claim's
	// (both set) is refused: the record is returned.
	Claim(ctx context.Context, key string, c Claim) (rec Record, claimed bool, err error)
	// Complete stores the result of the claim token holds and marks the
	// record done; ErrLeaseLost if the claim was taken over (only the
	// status and the token count: the holder completes after its window
	// or lease passed if no one took over). A result over MaxResultBytes
	// after compression, or over MaxResultDecodedBytes before it, is
	// recorded as unstored (the returned record's Unstored says why), not
	// as an error.
	Complete(ctx context.Context, key, token string, r Completion) (Record, error)
	// Fail marks the record failed with the cause; ErrLeaseLost if the
	// claim was taken over.
	Fail(ctx context.Context, key, token, cause string) error
	// Get reads the record; ErrNotFound when absent or expired (never
	// while in progress under a live lease).
	Get(ctx context.Context, key string) (Record, error)
}

// Options configure a Store.
type Options struct {
	// Table is the DynamoDB table (NewStore only): string keys pk and sk and
	// TTL on expires_at, such as the hookledger ledger table or the
	// smaller one TableInput describes.
	Table string
	// Expiry is how long a completed result is replayed (default 1 hour).
	// Per function: Config.Expiry.
	Expiry time.Duration
	// NoDeadlineLease is the claim's length when the context has no
	// deadline (default 15 minutes). In Lambda the claim ends with the
	// invocation's deadline, so a timed-out invocation blocks retries only
	// until then.
	NoDeadlineLease time.Duration
	// LeaseMargin is added to a deadline-derived claim (default
	// DefaultLeaseMargin, 5 s): the completion write may run up to 5 s after
	// the deadline, and a smaller margin lets a duplicate take the key over
	// and run the call again meanwhile. Raise it for calls whose downstream
	// effects can land later still. It also delays, by as much, the retry
	// of an invocation that crashed or timed out.
	LeaseMargin time.Duration
	// MaxAttempts stops running a call that failed this many times in its
	// window: later calls get ErrAttemptsExhausted until the window ends.
	// 0 (the default) runs it again on every call, as Powertools does.
	MaxAttempts int
	// CacheEntries turns on a local cache of completed results of at most
	// this many entries (default 0: off). A cached repeat costs no request.
	CacheEntries int
	// CacheBytes bounds the cache's results in bytes (default 1 MiB when
	// CacheEntries is set). Results larger than a quarter of it are not
	// cached.
	CacheBytes int
	// Disabled runs every call directly: no key, no store, no request.
	// For unit tests of code that takes a *Store (see also NewDisabled and
	// EnvDisabled); never in a deployment.
	Disabled bool
	// Logger receives warnings and errors, and a debug line per call
	// (default slog.Default()). Keys are snake_case: operation,
	// idempotency_key, outcome, attempt.
	Logger *slog.Logger
	// Metrics, when set, receives one CloudWatch Embedded Metric Format
	// line per call (usually os.Stdout in Lambda): IdempotencyHit,
	// IdempotencyMiss, IdempotencyInProgress and the rest (see Outcome),
	// with an Operation dimension.
	Metrics io.Writer
	// MetricsNamespace is the metrics' namespace (default "hookledger").
	MetricsNamespace string
	// OnOutcome, when set, is called once per call with its outcome, for
	// metrics of your own. It must be fast and must not panic.
	OnOutcome func(ctx context.Context, operation string, info Info, err error)
	// Now is the clock (default time.Now). Tests inject their own.
	Now func() time.Time
}

// Store runs idempotent calls against a Backend. Safe for concurrent use;
// build one at cold start and share it.
type Store struct {
	backend Backend
	opt     Options
	cache   *cache
	log     *slog.Logger
	emf     *emfWriter
	warned  atomic.Bool
}

// NewStore returns a store on the DynamoDB table opt.Table, reached
// through db (a *dynamodb.Client).
func NewStore(db API, opt Options) (*Store, error) {
	if opt.Disabled {
		return newStore(nil, opt)
	}
	if db == nil {
		return nil, fmt.Errorf("%w: nil DynamoDB client", ErrInvalid)
	}
	if opt.Table == "" {
		return nil, fmt.Errorf("%w: Options.Table is empty: name the DynamoDB table (string keys pk and sk, TTL on expires_at)", ErrInvalid)
	}
	s, err := newStore(nil, opt)
	if err != nil {
		return nil, err
	}
	s.backend = &dynamoBackend{db: db, table: opt.Table, clock: s.opt.Now}
	return s, nil
}

// NewStoreWith returns a store on a backend of your choosing (package
// idempotencytest has an in-memory one). opt.Table is ignored.
func NewStoreWith(b Backend, opt Options) (*Store, error) {
	if b == nil && !opt.Disabled {
		return nil, fmt.Errorf("%w: nil backend", ErrInvalid)
	}
	return newStore(b, opt)
}

// NewDisabled returns a store that runs every call directly, for unit tests
// of code that takes a *Store. Info.Outcome is OutcomeDisabled.
func NewDisabled() *Store {
	s, _ := newStore(nil, Options{Disabled: true, Logger: slog.New(slog.DiscardHandler)})
	return s
}

// DisabledEnv and PowertoolsDisabledEnv are the variables EnvDisabled
// reads.
const (
	DisabledEnv           = "HOOKLEDGER_IDEMPOTENCY_DISABLED"
	PowertoolsDisabledEnv = "POWERTOOLS_IDEMPOTENCY_DISABLED"
)

// EnvDisabled reports whether getenv (os.Getenv) sets DisabledEnv, or
// Powertools' POWERTOOLS_IDEMPOTENCY_DISABLED, to a true value (1, y, yes,
// t, true, on, in any case). Read it in main and pass it as
// Options.Disabled.
func EnvDisabled(getenv func(string) string) bool {
	for _, k := range []string{DisabledEnv, PowertoolsDisabledEnv} {
		switch strings.ToLower(strings.TrimSpace(getenv(k))) {
		case "1", "y", "yes", "t", "true", "on":
			return true
		}
	}
	return false
}

func newStore(b Backend, opt Options) (*Store, error) {
	switch {
	case opt.Expiry == 0:
		opt.Expiry = DefaultExpiry
	case opt.Expiry < time.Second:
		return nil, fmt.Errorf("%w: Expiry %v is under a second", ErrInvalid, opt.Expiry)
	}
	switch {
	case opt.NoDeadlineLease == 0:
		opt.NoDeadlineLease = DefaultNoDeadlineLease
	case opt.NoDeadlineLease < 0:
		return nil, fmt.Errorf("%w: NoDeadlineLease %v is negative", ErrInvalid, opt.NoDeadlineLease)
	}
	if opt.LeaseMargin == 0 {
		opt.LeaseMargin = DefaultLeaseMargin
	}
	if opt.LeaseMargin < 0 || opt.MaxAttempts < 0 || opt.CacheEntries < 0 || opt.CacheBytes < 0 {
		return nil, fmt.Errorf("%w: LeaseMargin, MaxAttempts, CacheEntries and CacheBytes must not be negative", ErrInvalid)
	}
	if opt.CacheEntries > 0 && opt.CacheBytes == 0 {
		opt.CacheBytes = DefaultCacheBytes
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.MetricsNamespace == "" {
		opt.MetricsNamespace = DefaultMetricsNamespace
	}
	s := &Store{backend: b, opt: opt, log: opt.Logger}
	if opt.CacheEntries > 0 {
		s.cache = newCache(opt.CacheEntries, opt.CacheBytes)
	}
	if opt.Metrics != nil {
		s.emf = newEMFWriter(opt.Metrics, opt.MetricsNamespace)
	}
	if opt.Disabled {
		s.log.Warn("idempotency disabled: every call runs without a key or a store; never set this in a deployment")
	}
	return s, nil
}

// Backend is the store's backend (nil when disabled).
func (s *Store) Backend() Backend { return s.backend }

var operationName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$`)

func validOperation(op string) error {
	if !operationName.MatchString(op) {
		return fmt.Errorf("%w: operation name %q: use 1-128 letters, digits and _ . : / - (it names the key space; two functions with one name share results)", ErrInvalid, op)
	}
	return nil
}

// KeyOf returns the stored key a call of operation with this key material
// uses: "operation#" and the hex SHA-256 of the material's canonical JSON.
func KeyOf(operation string, key any) (string, error) {
	if err := validOperation(operation); err != nil {
		return "", err
	}
	c, err := canonical(key)
	if err != nil {
		return "", fmt.Errorf("%w: key does not encode as JSON: %v", ErrInvalid, err)
	}
	return operation + "#" + digest(c), nil
}

// Forget ends the window of operation's call with this key material, so
// that the next call runs afresh (an operator's tool: a result that must
// not be replayed any more, or a call stuck at ErrAttemptsExhausted).
// ErrNotFound when there is no record. The local cache of this process
// drops the key too; other processes' caches keep it until it expires.
func (s *Store) Forget(ctx context.Context, operation string, key any) error {
	k, err := KeyOf(operation, key)
	if err != nil {
		return err
	}
	if s.cache != nil {
		s.cache.remove(k)
	}
	f, ok := s.backend.(interface {
		Forget(ctx context.Context, key string) error
	})
	if !ok {
		return fmt.Errorf("%w: the backend %T cannot forget", ErrInvalid, s.backend)
	}
	return f.Forget(ctx, k)
}
