package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/hookledger/hookledger/internal/awsjson"
	"github.com/hookledger/hookledger/internal/fallback"
)

// SSMAPI reads one SSM parameter, decrypted ("" when it has no value).
// Errors are smithy.APIError values (awsjson.SSM).
type SSMAPI interface {
	GetParameter(ctx context.Context, name string) (string, error)
}

// SecretsManagerAPI reads a secret's current string value ("" when it has
// none: a binary secret). Errors are smithy.APIError values
// (awsjson.SecretsManager).
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, id string) (string, error)
}

var (
	_ SSMAPI            = awsjson.SSM{}
	_ SecretsManagerAPI = awsjson.SecretsManager{}
)

// Defaults for Secrets' zero fields.
const (
	DefaultTTL         = 5 * time.Minute
	DefaultMaxStale    = time.Hour
	DefaultNegativeTTL = 10 * time.Second
)

// Secrets resolves secret references, each on its own, and caches what it
// fetched for TTL, so a warm receiver makes no secret calls.
//
// A refresh that fails for a transient cause (throttling, a 5xx, a timeout)
// serves the last value for up to MaxStale after its fetch: a store outage
// must not reject every webhook. Any other failure (deleted, revoked,
// unusable) drops the value at once, so a revoked secret stops working
// within TTL. Failures are kept for NegativeTTL, so a missing secret does
// not cost a call per request.
type Secrets struct {
	SSM            SSMAPI            // nil: "ssm:" references fail
	SecretsManager SecretsManagerAPI // nil: "secretsmanager:" references fail
	Getenv         func(string) string
	TTL            time.Duration // default DefaultTTL
	MaxStale       time.Duration // default DefaultMaxStale
	NegativeTTL    time.Duration // default DefaultNegativeTTL
	Now            func() time.Time

	mu    sync.Mutex
	cache map[Ref]*cached
}

type cached struct {
	value    string    // last good value ("" when none)
	fetched  time.Time // when value was fetched
	err      error     // last failure, when it is newer than value
	failedAt time.Time
}

// Sentinels for why a reference did not resolve. Every resolution error
// wraps ErrSecretUnavailable and, where the cause is known, one more.
var (
	// ErrSecretUnavailable means a referenced secret could not be read.
	ErrSecretUnavailable = errors.New("secret unavailable")
	// ErrSecretGone means the secret does not exist (deleted, never
	// created): a revoked rotation entry.
	ErrSecretGone = errors.New("secret does not exist")
	// ErrSecretDenied means the function may not read it (IAM or KMS).
	ErrSecretDenied = errors.New("access to the secret denied")
	// ErrSecretUnusable means it was read but cannot serve: empty, binary,
	// or (as a signing secret) a JSON key/value secret.
	ErrSecretUnusable = errors.New("secret value unusable")
	// ErrSecretTransient means throttling, a 5xx, a timeout or a broken
	// connection: retrying later may work.
	ErrSecretTransient = errors.New("secret store transiently unavailable")
)

// Resolved is the outcome of resolving one tenant's references.
type Resolved struct {
	Values []string // the secrets that resolved, in the references' order
	Errors []error  // one per reference that did not resolve
	Failed []Ref    // the reference of each entry of Errors
}

// Problems of a reference that did not resolve, as LogFailures names them
// (the secret_problem field an operator filters on).
const (
	ProblemDeleted      = "deleted"
	ProblemDenied       = "access denied"
	ProblemThrottled    = "throttled or unavailable"
	ProblemNotPlaintext = "not a plaintext value"
	ProblemBadRef       = "bad reference"
	ProblemUnknown      = "unknown"
)

// Problem names why a resolution error happened, and what fixes it.
func Problem(err error) (problem, fix string) {
	switch {
	case errors.Is(err, ErrSecretGone):
		return ProblemDeleted, "create the secret again, or remove the reference from the tenant's secrets if its rotation is over"
	case errors.Is(err, ErrSecretDenied):
		return ProblemDenied, "keep the secret under SecretsPrefix (not under its reconcile/ path) and grant its KMS key (SecretsKmsKeyArn); a secret elsewhere needs its own grant in the receiver's role (docs/deploy.md)"
	case errors.Is(err, ErrSecretTransient):
		return ProblemThrottled, "the store throttled, failed or timed out with no cached value; if it lasts, raise the store's throughput or look for other callers sharing its quota"
	case errors.Is(err, ErrSecretUnusable):
		return ProblemNotPlaintext, "store the signing secret alone, as a plaintext value (not key/value JSON, not binary, not empty)"
	case errors.Is(err, ErrBadRef):
		return ProblemBadRef, "fix the reference in the sources configuration"
	}
	return ProblemUnknown, "read the error"
}

// LogFailures writes one line per reference that did not resolve: the
// reference (never a value), the problem and its fix. The receiver's
// SecretUnavailable alarm points at these lines.
func (r Resolved) LogFailures(ctx context.Context, log *slog.Logger, level slog.Level) {
	for i, err := range r.Errors {
		ref := "unknown"
		if i < len(r.Failed) {
			ref = r.Failed[i].String()
		}
		problem, fix := Problem(err)
		log.Log(ctx, level, "signing secret unreadable", "secret_ref", ref, "secret_problem", problem, "secret_fix", fix, "error", err.Error())
	}
}

// Only reports whether every failure wraps target (true when none failed).
func (r Resolved) Only(target error) bool {
	for _, err := range r.Errors {
		if !errors.Is(err, target) {
			return false
		}
	}
	return true
}

// Err joins the failures (nil when none).
func (r Resolved) Err() error { return errors.Join(r.Errors...) }

// Resolve resolves signing secrets, each reference on its own, so a
// rotation list [new, deleted-old] still verifies with new. A JSON
// key/value secret is refused: it is no provider's signing secret.
func (s *Secrets) Resolve(ctx context.Context, refs []Ref) Resolved {
	var out Resolved
	for _, ref := range refs {
		v, err := s.resolve(ctx, ref)
		if err == nil && ref.Scheme == SchemeSecretsManager && JSONObject(v) {
			err = fmt.Errorf("%w: %w: %s holds a JSON key/value secret; store the signing secret as plaintext (console: Other type of secret, Plaintext; CLI: --secret-string 'whsec_...')", ErrSecretUnavailable, ErrSecretUnusable, ref)
		}
		if err != nil {
			out.Errors = append(out.Errors, err)
			out.Failed = append(out.Failed, ref)
			continue
		}
		out.Values = append(out.Values, v)
	}
	return out
}

// Value resolves one secret reference, cached like Resolve, and returns
// what the store holds as is, a JSON document too: its user decides.
func (s *Secrets) Value(ctx context.Context, ref Ref) (string, error) { return s.resolve(ctx, ref) }

// Document reads what an "ssm:" or "secretsmanager:" reference holds, as
// is and uncached: the sources JSON kept in a store, read at cold start.
func (s *Secrets) Document(ctx context.Context, ref Ref) (string, error) {
	if ref.Scheme != SchemeSSM && ref.Scheme != SchemeSecretsManager {
		return "", fmt.Errorf("%w: %s: want an ssm or secretsmanager reference", ErrBadRef, ref)
	}
	return s.fetch(ctx, ref)
}

func (s *Secrets) resolve(ctx context.Context, ref Ref) (string, error) {
	switch ref.Scheme {
	case SchemeLiteral:
		return ref.Name, nil
	case SchemeEnv:
		if s.Getenv == nil {
			return "", fmt.Errorf("%w: %w: %s (no environment)", ErrSecretUnavailable, ErrSecretUnusable, ref)
		}
		v := s.Getenv(ref.Name)
		if v == "" {
			return "", fmt.Errorf("%w: %w: environment variable %s is empty or unset", ErrSecretUnavailable, ErrSecretUnusable, ref.Name)
		}
		return v, nil
	case SchemeSSM, SchemeSecretsManager:
	default:
		return "", fmt.Errorf("%w: %w: %s", ErrSecretUnavailable, ErrBadRef, ref)
	}
	now := s.now()
	s.mu.Lock()
	c := s.cache[ref]
	if c == nil {
		c = &cached{}
		if s.cache == nil {
			s.cache = map[Ref]*cached{}
		}
		s.cache[ref] = c
	}
	entry := *c
	s.mu.Unlock()

	fresh := entry.value != "" && now.Sub(entry.fetched) < or(s.TTL, DefaultTTL)
	recentFailure := entry.err != nil && now.Sub(entry.failedAt) < or(s.NegativeTTL, DefaultNegativeTTL)
	switch {
	case fresh:
		return entry.value, nil
	case recentFailure:
		return s.staleOr(entry, now, entry.err)
	}
	v, err := s.fetch(ctx, ref)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		*c = cached{value: v, fetched: now}
		return v, nil
	}
	c.err, c.failedAt = err, now
	if !errors.Is(err, ErrSecretTransient) {
		c.value = "" // deleted, revoked or unusable: never serve it again
	}
	return s.staleOr(*c, now, err)
}

// staleOr serves the last value when err is transient and the value is not
// older than MaxStale; otherwise it returns err.
func (s *Secrets) staleOr(c cached, now time.Time, err error) (string, error) {
	if errors.Is(err, ErrSecretTransient) && c.value != "" && now.Sub(c.fetched) < or(s.MaxStale, DefaultMaxStale) {
		return c.value, nil
	}
	return "", err
}

func (s *Secrets) now() time.Time { return fallback.Now(s.Now) }

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (s *Secrets) fetch(ctx context.Context, ref Ref) (string, error) {
	switch ref.Scheme {
	case SchemeSSM:
		if s.SSM == nil {
			return "", fmt.Errorf("%w: %w: %s (no SSM client configured)", ErrSecretUnavailable, ErrSecretUnusable, ref)
		}
		v, err := s.SSM.GetParameter(ctx, ref.Name)
		if err != nil {
			return "", classify(ref, err)
		}
		if v == "" {
			return "", fmt.Errorf("%w: %w: %s is empty", ErrSecretUnavailable, ErrSecretUnusable, ref)
		}
		return v, nil
	default:
		if s.SecretsManager == nil {
			return "", fmt.Errorf("%w: %w: %s (no Secrets Manager client configured)", ErrSecretUnavailable, ErrSecretUnusable, ref)
		}
		v, err := s.SecretsManager.GetSecretValue(ctx, ref.Name)
		if err != nil {
			return "", classify(ref, err)
		}
		if v == "" {
			return "", fmt.Errorf("%w: %w: %s has no string value (a binary secret); store it as a string", ErrSecretUnavailable, ErrSecretUnusable, ref)
		}
		return v, nil
	}
}

// JSONObject reports whether v is a JSON object, which is how the console
// stores key/value secrets. No signing secret or API key looks like one.
func JSONObject(v string) bool {
	t := strings.TrimSpace(v)
	if !strings.HasPrefix(t, "{") {
		return false
	}
	var obj map[string]any
	return json.Unmarshal([]byte(t), &obj) == nil
}

var retryables = retry.IsErrorRetryables(append([]retry.IsErrorRetryable{}, retry.DefaultRetryables...))
var throttles = retry.IsErrorThrottles(append([]retry.IsErrorThrottle{}, retry.DefaultThrottles...))

// classify sorts a secret store error into one of the sentinels.
func classify(ref Ref, err error) error {
	var api smithy.APIError
	code := ""
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		retryables.IsErrorRetryable(err) == aws.TrueTernary, throttles.IsErrorThrottle(err) == aws.TrueTernary,
		code == "InternalServiceError", code == "InternalServerError", code == "InternalFailure":
		return fmt.Errorf("%w: %w: %s: %v", ErrSecretUnavailable, ErrSecretTransient, ref, err)
	case code == "ParameterNotFound", code == "ParameterVersionNotFound", code == "ResourceNotFoundException":
		return fmt.Errorf("%w: %w: %s", ErrSecretUnavailable, ErrSecretGone, ref)
	case code == "InvalidRequestException" && strings.Contains(strings.ToLower(err.Error()), "deletion"):
		// Secrets Manager answers a secret scheduled for deletion this way.
		return fmt.Errorf("%w: %w: %s is scheduled for deletion", ErrSecretUnavailable, ErrSecretGone, ref)
	case code == "AccessDeniedException", code == "AccessDenied", strings.HasPrefix(code, "KMS"),
		code == "DecryptionFailure", code == "InvalidKeyId", code == "UnrecognizedClientException":
		return fmt.Errorf("%w: %w: %s: %s (check the receiver role's grants: docs/deploy.md, Senders and their secrets)", ErrSecretUnavailable, ErrSecretDenied, ref, code)
	}
	return fmt.Errorf("%w: %s: %v", ErrSecretUnavailable, ref, err)
}
