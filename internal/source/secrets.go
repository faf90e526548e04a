package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// SSMAPI is the slice of the SSM client the secret cache calls.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// SecretsManagerAPI is the slice of the Secrets Manager client it calls.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var (
	_ SSMAPI            = (*ssm.Client)(nil)
	_ SecretsManagerAPI = (*secretsmanager.Client)(nil)
)

// Secrets resolves secret references and caches what it fetched for TTL,
// so a warm receiver makes no secret calls. When a refresh fails it keeps
// serving the last value it had (a secret store outage must not reject
// every webhook) and tries again on the next request.
type Secrets struct {
	SSM            SSMAPI            // nil: "ssm:" references fail
	SecretsManager SecretsManagerAPI // nil: "secretsmanager:" references fail
	Getenv         func(string) string
	TTL            time.Duration // default 5 minutes
	Now            func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	value   string
	fetched time.Time
}

// ErrSecretUnavailable means a referenced secret could not be read.
var ErrSecretUnavailable = errors.New("secret unavailable")

// Resolve returns the values of refs in order.
func (s *Secrets) Resolve(ctx context.Context, refs []string) ([]string, error) {
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		v, err := s.resolve(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Secrets) resolve(ctx context.Context, ref string) (string, error) {
	kind, name, ok := strings.Cut(ref, ":")
	switch {
	case !ok || (kind != "env" && kind != "ssm" && kind != "secretsmanager"):
		return ref, nil // a literal secret
	case kind == "env":
		getenv := s.Getenv
		if getenv == nil {
			return "", fmt.Errorf("%w: env:%s (no environment)", ErrSecretUnavailable, name)
		}
		v := getenv(name)
		if v == "" {
			return "", fmt.Errorf("%w: environment variable %s is empty", ErrSecretUnavailable, name)
		}
		return v, nil
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ttl := s.TTL
	if ttl == 0 {
		ttl = 5 * time.Minute
	}
	s.mu.Lock()
	c, hit := s.cache[ref]
	s.mu.Unlock()
	if hit && now().Sub(c.fetched) < ttl {
		return c.value, nil
	}
	v, err := s.fetch(ctx, kind, name)
	if err != nil {
		if hit {
			return c.value, nil // stale beats unavailable
		}
		return "", err
	}
	s.mu.Lock()
	if s.cache == nil {
		s.cache = map[string]cached{}
	}
	s.cache[ref] = cached{value: v, fetched: now()}
	s.mu.Unlock()
	return v, nil
}

func (s *Secrets) fetch(ctx context.Context, kind, name string) (string, error) {
	switch kind {
	case "ssm":
		if s.SSM == nil {
			return "", fmt.Errorf("%w: ssm:%s (no SSM client configured)", ErrSecretUnavailable, name)
		}
		decrypt := true
		out, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: &name, WithDecryption: &decrypt})
		if err != nil {
			return "", fmt.Errorf("%w: ssm:%s: %v", ErrSecretUnavailable, name, err)
		}
		if out.Parameter == nil || out.Parameter.Value == nil || *out.Parameter.Value == "" {
			return "", fmt.Errorf("%w: ssm:%s is empty", ErrSecretUnavailable, name)
		}
		return *out.Parameter.Value, nil
	default:
		if s.SecretsManager == nil {
			return "", fmt.Errorf("%w: secretsmanager:%s (no Secrets Manager client configured)", ErrSecretUnavailable, name)
		}
		out, err := s.SecretsManager.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &name})
		if err != nil {
			return "", fmt.Errorf("%w: secretsmanager:%s: %v", ErrSecretUnavailable, name, err)
		}
		if out.SecretString == nil || *out.SecretString == "" {
			return "", fmt.Errorf("%w: secretsmanager:%s has no string value", ErrSecretUnavailable, name)
		}
		return *out.SecretString, nil
	}
}
