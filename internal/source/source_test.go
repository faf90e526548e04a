package source

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

func TestParseAndRegistry(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["whsec_a","env:NEXT"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(cfg, &Secrets{Getenv: func(k string) string { return map[string]string{"NEXT": "whsec_b"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	v, refs, err := reg.Verifier("stripe", "acme")
	if err != nil || v.Provider() != "stripe" || len(refs) != 2 {
		t.Fatalf("%v %v %v", v, refs, err)
	}
	secrets, err := reg.Secrets(t.Context(), refs)
	if err != nil || strings.Join(secrets, ",") != "whsec_a,whsec_b" {
		t.Fatalf("%v %v", secrets, err)
	}
	if _, _, err := reg.Verifier("stripe", "globex"); !errors.Is(err, ErrUnknownTenant) {
		t.Errorf("unknown tenant: %v", err)
	}
	if _, _, err := reg.Verifier("paypal", "acme"); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("unknown source: %v", err)
	}
}

func TestBadConfigsAreClearErrors(t *testing.T) {
	t.Parallel()
	for cfg, want := range map[string]string{
		`{}`: "no sources",
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["s"]}},"tolerence":"5m"}}`: "unknown field",
		`{"stripe":{"provider":"nope","tenants":{"acme":{"secrets":["s"]}}}}`:                    "stripe",
		`{"stripe":{"provider":"stripe"}}`:                                                       "no tenants",
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":[]}}}}`:                     "no secrets",
		`{"str/ipe":{"provider":"stripe","tenants":{"acme":{"secrets":["s"]}}}}`:                 "name must match",
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["ssm:"]}}}}`:               "names nothing",
	} {
		parsed, err := Parse([]byte(cfg))
		if err == nil {
			_, err = NewRegistry(parsed, &Secrets{})
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", cfg, err, want)
		}
	}
}

type fakeSSM struct {
	calls int
	fail  bool
}

func (f *fakeSSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.calls++
	if f.fail {
		return nil, errors.New("throttled")
	}
	v := "secret-of-" + *in.Name
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: &v}}, nil
}

func TestSecretsAreCachedAndStaleBeatsUnavailable(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	f := &fakeSSM{}
	s := &Secrets{SSM: f, TTL: time.Minute, Now: func() time.Time { return now }}
	for range 3 {
		v, err := s.Resolve(t.Context(), []string{"ssm:/a"})
		if err != nil || v[0] != "secret-of-/a" {
			t.Fatalf("%v %v", v, err)
		}
	}
	if f.calls != 1 {
		t.Errorf("SSM called %d times within the TTL, want 1", f.calls)
	}
	now = now.Add(2 * time.Minute)
	f.fail = true
	if v, err := s.Resolve(t.Context(), []string{"ssm:/a"}); err != nil || v[0] != "secret-of-/a" {
		t.Errorf("stale value not served on refresh failure: %v %v", v, err)
	}
	if _, err := s.Resolve(t.Context(), []string{"ssm:/never-fetched"}); !errors.Is(err, ErrSecretUnavailable) {
		t.Errorf("uncached failure: %v", err)
	}
	if _, err := (&Secrets{}).Resolve(t.Context(), []string{"secretsmanager:x"}); !errors.Is(err, ErrSecretUnavailable) {
		t.Errorf("no client: %v", err)
	}
}
