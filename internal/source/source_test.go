package source

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
)

func TestParseAndRegistry(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_a","env:NEXT"]}}}}`))
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
	res := reg.Secrets(t.Context(), refs)
	if res.Err() != nil || strings.Join(res.Values, ",") != "whsec_a,whsec_b" {
		t.Fatalf("%v %v", res.Values, res.Err())
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
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:s"]}},"tolerence":"5m"}}`: "unknown field",
		`{"stripe":{"provider":"nope","tenants":{"acme":{"secrets":["literal:s"]}}}}`:                    "stripe",
		`{"stripe":{"provider":"stripe"}}`:                                               "no tenants",
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":[]}}}}`:             "no secrets",
		`{"str/ipe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:s"]}}}}`: "name must be 1 to 64 letters",
		`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["ssm:"]}}}}`:       "names nothing",
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

// A reference that is not a valid one used to become the HMAC key itself, so
// a request signed with the reference string (which is in the docs and the
// samconfig) was accepted. Each is now a startup error that says what to
// write, and never quotes a value that may be a secret.
func TestReferenceThatIsNotValidIsAStartupError(t *testing.T) {
	t.Parallel()
	tests := []struct{ ref, want string }{
		{"secretmanager:hookledger/prod/x", `did you mean "secretsmanager:"`},
		{"SSM:/hookledger/prod/x", `did you mean "ssm:"`},
		{"Ssm:/hookledger/prod/x", `did you mean "ssm:"`},
		{"arn:aws:secretsmanager:us-east-1:123456789012:secret:hookledger/prod/x", `write "secretsmanager:arn:aws:secretsmanager:`},
		{"arn:aws:ssm:us-east-1:123456789012:parameter/hookledger/prod/x", `write "ssm:arn:aws:ssm:`},
		{"vault:secret/x", "unknown scheme (5 bytes before its first colon)"},
		{"/hookledger/prod/x", `"ssm:/hookledger/prod/x"`},
		{"whsec_bare_secret_value", `write an inline secret as "literal:<secret>"`},
		{"env:not a name", "want an environment variable name"},
		{"ssm:hookledger/prod/x", "starts with a slash"},
		{"secretsmanager:arn:aws:s3:::bucket", "not a Secrets Manager secret ARN"},
		{"literal:", "names nothing"},
		{"  ", "empty entry"},
	}
	for _, tt := range tests {
		_, err := ParseRef(tt.ref)
		if !errors.Is(err, ErrBadRef) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseRef(%q) = %v, want ErrBadRef mentioning %q", tt.ref, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "whsec_bare_secret_value") {
			t.Errorf("ParseRef error quotes the secret: %v", err)
		}
		cfg := map[string]Source{"stripe": {Tenants: map[string]Tenant{"acme": {Secrets: []string{tt.ref}}}}}
		cfg["stripe"] = Source{Config: cfg["stripe"].Config, Tenants: cfg["stripe"].Tenants}
		src := cfg["stripe"]
		src.Provider = "stripe"
		cfg["stripe"] = src
		if _, err := NewRegistry(cfg, &Secrets{}); !errors.Is(err, ErrBadRef) {
			t.Errorf("NewRegistry accepted secrets [%q]: %v", tt.ref, err)
		}
	}
	for _, good := range []string{"literal:whsec_x", "literal:a:b:c", "env:STRIPE_SECRET", "ssm:/hookledger/prod/x",
		"ssm:plainname", "secretsmanager:hookledger/prod/x", "secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:x-AbCdEf",
		"ssm:arn:aws:ssm:us-east-1:123456789012:parameter/hookledger/prod/x"} {
		if _, err := ParseRef(good); err != nil {
			t.Errorf("ParseRef(%q): %v", good, err)
		}
	}
	if got := (Ref{Scheme: SchemeLiteral, Name: "whsec_x"}).String(); strings.Contains(got, "whsec") {
		t.Errorf("a literal renders as %q; it must never show its value", got)
	}
}

// fakeSSM answers GetParameter with a scripted error or "secret-of-NAME".
type fakeSSM struct {
	calls int
	err   error
}

func (f *fakeSSM) GetParameter(ctx context.Context, name string) (string, error) {
	f.calls++
	if f.err != nil {
		return "", f.err
	}
	return "secret-of-" + name, nil
}

func apiErr(code string) error { return &smithy.GenericAPIError{Code: code, Message: code} }

// A stale value is served only for a transient failure and only up to
// MaxStale; a deleted or revoked secret stops working at the next refresh.
// Before, any failure kept serving the cached value forever.
func TestStaleOnlyOnTransientFailuresAndOnlyUpToMaxStale(t *testing.T) {
	t.Parallel()
	ref := Ref{Scheme: SchemeSSM, Name: "/a"}
	tests := []struct {
		name      string
		err       error
		stale     bool // still served right after the TTL
		sentinel  error
		afterMax  bool // still served after MaxStale
		negCached bool // the failure is remembered for NegativeTTL
	}{
		{"throttling", apiErr("ThrottlingException"), true, ErrSecretTransient, false, true},
		{"5xx", apiErr("InternalServerError"), true, ErrSecretTransient, false, true},
		{"timeout", context.DeadlineExceeded, true, ErrSecretTransient, false, true},
		{"deleted", apiErr("ParameterNotFound"), false, ErrSecretGone, false, true},
		{"access revoked", apiErr("AccessDeniedException"), false, ErrSecretDenied, false, true},
		{"unknown failure", errors.New("something else"), false, ErrSecretUnavailable, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Unix(1000, 0)
			f := &fakeSSM{}
			s := &Secrets{SSM: f, TTL: time.Minute, MaxStale: 10 * time.Minute, NegativeTTL: 5 * time.Second, Now: func() time.Time { return now }}
			for range 3 {
				if v, err := s.Value(t.Context(), ref); err != nil || v != "secret-of-/a" {
					t.Fatalf("%q %v", v, err)
				}
			}
			if f.calls != 1 {
				t.Errorf("SSM called %d times within the TTL, want 1", f.calls)
			}
			now = now.Add(2 * time.Minute)
			f.err = tt.err
			v, err := s.Value(t.Context(), ref)
			if tt.stale && (err != nil || v != "secret-of-/a") {
				t.Errorf("after a %s refresh failure: %q %v, want the stale value", tt.name, v, err)
			}
			if !tt.stale && (err == nil || !errors.Is(err, tt.sentinel) || !errors.Is(err, ErrSecretUnavailable)) {
				t.Errorf("after a %s refresh failure: %q %v, want %v and no stale value", tt.name, v, err, tt.sentinel)
			}
			calls := f.calls
			s.Value(t.Context(), ref)
			if tt.negCached && f.calls != calls {
				t.Errorf("a failure within NegativeTTL called SSM again")
			}
			now = now.Add(10 * time.Minute)
			if v, err := s.Value(t.Context(), ref); (err == nil) != tt.afterMax {
				t.Errorf("past MaxStale: %q %v", v, err)
			}
			if f.calls == calls {
				t.Errorf("past NegativeTTL the store was not asked again")
			}
			// Once the store answers again, the fresh value is served.
			f.err = nil
			now = now.Add(time.Minute)
			if v, err := s.Value(t.Context(), ref); err != nil || v != "secret-of-/a" {
				t.Errorf("after recovery: %q %v", v, err)
			}
		})
	}
}

// A rotation list resolves one reference at a time: [new, deleted-old]
// yields new and a "gone" error for old; before, one failure failed all.
func TestResolveEachReferenceOnItsOwn(t *testing.T) {
	t.Parallel()
	f := &fakeSSM{}
	s := &Secrets{SSM: f, Getenv: func(k string) string { return map[string]string{"NEW": "whsec_new"}[k] }}
	f.err = apiErr("ParameterNotFound")
	res := s.Resolve(t.Context(), []Ref{{SchemeEnv, "NEW"}, {SchemeSSM, "/old"}})
	if len(res.Values) != 1 || res.Values[0] != "whsec_new" || len(res.Errors) != 1 || !res.Only(ErrSecretGone) {
		t.Fatalf("got %v / %v, want [whsec_new] and one ErrSecretGone", res.Values, res.Errors)
	}
	f.err = apiErr("ThrottlingException")
	res = s.Resolve(t.Context(), []Ref{{SchemeEnv, "NEW"}, {SchemeSSM, "/other"}})
	if len(res.Values) != 1 || res.Only(ErrSecretGone) {
		t.Fatalf("a throttled reference must not count as gone: %v", res.Errors)
	}
}

func TestGrants(t *testing.T) {
	t.Parallel()
	// What template.yaml grants for SecretsPrefix=hookledger/prod, plus an
	// exact ARN a user's edited template grants besides.
	g, err := ParseGrants("ssm=/hookledger/prod;secretsmanager_prefix=hookledger/prod/;except=reconcile/;" +
		"secretsmanager=arn:aws:secretsmanager:us-east-1:123456789012:secret:shared/exact")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref  string
		ok   bool
		want string // in the refusal
	}{
		{"ssm:/hookledger/prod/stripe/acme", true, ""},
		{"ssm:arn:aws:ssm:us-east-1:123456789012:parameter/hookledger/prod/stripe/acme", true, ""},
		{"ssm:/hookledger/acme/stripe", false, "SecretsPrefix=hookledger/acme"},
		{"ssm:/hookledger/production/x", false, "only under /hookledger/prod/"},
		{"ssm:/hookledger/prod", false, "only under /hookledger/prod/"},
		// The reconciler's credentials: denied to the functions these grants are for.
		{"ssm:/hookledger/prod/reconcile/stripe-api", false, "reconciler's provider API credentials"},
		{"ssm:/hookledger/prod/reconciled/x", true, ""},
		{"secretsmanager:hookledger/prod/stripe/globex", true, ""},
		// A name under the prefix, given as its ARN with or without the
		// random suffix: the prefix grant covers both.
		{"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:hookledger/prod/github/acme", true, ""},
		{"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:hookledger/prod/github/acme-AbC123", true, ""},
		{"secretsmanager:hookledger/prod/reconcile/stripe-api", false, "reconciler's provider API credentials"},
		{"secretsmanager:hookledger/github/acme", false, "rename the secret"},
		{"secretsmanager:hookledger/production/x", false, "hookledger/prod/..."},
		// The exact ARN, given without the random suffix, and the secret's
		// name or full ARN with it: all are what the grant covers.
		{"secretsmanager:shared/exact", true, ""},
		{"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:shared/exact-AbC123", true, ""},
		{"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:shared/exact", true, ""},
		{"secretsmanager:shared/exactly", false, "outside the granted secrets"},
		{"literal:whsec_x", true, ""},
		{"env:X", true, ""},
	}
	for _, tt := range tests {
		ref, err := ParseRef(tt.ref)
		if err != nil {
			t.Fatal(err)
		}
		err = g.Check(ref)
		if (err == nil) != tt.ok || (err != nil && (!errors.Is(err, ErrNotGranted) || !strings.Contains(err.Error(), tt.want))) {
			t.Errorf("Check(%s) = %v, want ok=%v (%q)", tt.ref, err, tt.ok, tt.want)
		}
	}
	// Without SecretsPrefix nothing is granted; the message names the
	// parameter and a value that would grant the reference.
	none, _ := ParseGrants("ssm=;secretsmanager_prefix=")
	err = none.Check(Ref{SchemeSSM, "/hookledger/prod/stripe/acme"})
	if err == nil || !strings.Contains(err.Error(), "SecretsPrefix=hookledger/prod/stripe") {
		t.Errorf("no SSM grant: %v, want the parameter to set", err)
	}
	err = none.Check(Ref{SchemeSecretsManager, "hookledger/prod/stripe/globex"})
	if err == nil || !strings.Contains(err.Error(), "SecretsPrefix=hookledger/prod/stripe") {
		t.Errorf("no Secrets Manager grant: %v, want the parameter to set", err)
	}
	// The reconciler's credentials belong under reconcile/: the suggestion
	// is the prefix above it.
	creds, _ := ParseGrantsFor("ssm=;secretsmanager_prefix=", ReconcileCredentialGrants)
	if err := creds.Check(Ref{SchemeSSM, "/hookledger/prod/reconcile/stripe-api"}); err == nil || !strings.Contains(err.Error(), "SecretsPrefix=hookledger/prod ") {
		t.Errorf("no credential grant: %v, want SecretsPrefix=hookledger/prod", err)
	}
	creds, _ = ParseGrantsFor("ssm=/hookledger/prod/reconcile;secretsmanager_prefix=hookledger/prod/reconcile/", ReconcileCredentialGrants)
	if err := creds.Check(Ref{SchemeSSM, "/hookledger/prod/stripe-api"}); err == nil || !strings.Contains(err.Error(), "ssm:/hookledger/prod/reconcile/stripe-api") {
		t.Errorf("a credential outside reconcile/: %v, want where to move it", err)
	}
	if _, err := ParseGrants("ssm=/a;vault=x"); err == nil {
		t.Error("an unknown grant key was accepted")
	}
}

func TestCheckGrantsNamesEveryReferenceOutside(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`{"stripe":{"provider":"stripe","tenants":{
		"acme":{"secrets":["ssm:/hookledger/acme/stripe"]},
		"globex":{"secrets":["secretsmanager:hookledger/github/acme","ssm:/hookledger/prod/stripe/globex"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(cfg, &Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	err = reg.CheckGrants(Grants{SSMPath: "/hookledger/prod"})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{`tenant "acme": secret reference outside what the template grants: ssm:/hookledger/acme/stripe`, `secretsmanager:hookledger/github/acme`} {
		if !strings.Contains(msg, want) {
			t.Errorf("CheckGrants: %q, want it to mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "globex/") || strings.Contains(msg, "ssm:/hookledger/prod/stripe/globex") {
		t.Errorf("CheckGrants flagged a granted reference: %s", msg)
	}
}

// A hand-edited sources document that repeats a key or carries something
// after it is refused: encoding/json would keep only the last block, or drop
// the rest, without a word.
func TestParseRefusesWhatJSONWouldDropQuietly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, want string }{
		{`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:a"]},"acme":{"secrets":["literal:b"]}}}}`, `key "acme" appears twice`},
		{`{"stripe":{"provider":"stripe","tenants":{}},"stripe":{"provider":"github","tenants":{}}}`, `key "stripe" appears twice`},
		{`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:a"]}}}} {"github":{}}`, "more after the JSON document"},
	} {
		if _, err := Parse([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.doc, err, tc.want)
		}
	}
	if _, err := Parse([]byte(`{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:a"]},"Acme":{"secrets":["literal:b"]}}}}`)); err != nil {
		t.Errorf("tenants differing in case are two tenants: %v", err)
	}
}

// The replay guard is on by default where the event id is not covered by the
// signature (a captured delivery re-sent under a new id would verify) and
// off where it is; "replay_guard": false turns a default-on guard off, and
// true turns it on anywhere: absent and false are told apart.
func TestReplayGuardDefaultsByWhatTheSignatureCovers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		source string // a source entry without tenants
		want   bool
	}{
		{`{"provider":"github"}`, true},
		{`{"provider":"shopify"}`, true},
		{`{"provider":"gitlab"}`, true},
		{`{"provider":"twilio"}`, true},
		{`{"provider":"linear"}`, true},
		{`{"provider":"generic","generic":{"id_header":"X-Acme-Id"}}`, true},
		{`{"provider":"generic","generic":{"type_header":"X-Acme-Event"}}`, false}, // key derived from the signed body and the type
		{`{"provider":"generic"}`, false},
		{`{"provider":"stripe","key_header":"X-Request-Id"}`, true},
		{`{"provider":"github","key_path":"hook_id"}`, false}, // from the signed body
		{`{"provider":"gitlab","key_path":"object_attributes.id"}`, true},
		{`{"provider":"stripe"}`, false},
		{`{"provider":"standard-webhooks"}`, false},
		{`{"provider":"slack"}`, false},
		{`{"provider":"paddle"}`, false},
		{`{"provider":"square","url":"https://hooks.example.com/webhooks/src/acme"}`, false},
		{`{"provider":"intercom"}`, false},
		{`{"provider":"twitch"}`, false},
		{`{"provider":"zoom"}`, false},
		{`{"provider":"github","replay_guard":false}`, false},
		{`{"provider":"shopify","replay_guard":false}`, false},
		{`{"provider":"stripe","replay_guard":true}`, true},
		{`{"provider":"github","replay_guard":true}`, true},
	} {
		doc := `{"src":` + strings.TrimSuffix(tc.source, "}") + `,"tenants":{"acme":{"secrets":["literal:s3cr3t-value"]}}}}`
		cfg, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.source, err)
		}
		reg, err := NewRegistry(cfg, &Secrets{})
		if err != nil {
			t.Fatalf("%s: %v", tc.source, err)
		}
		if got := reg.ReplayGuard("src"); got != tc.want {
			t.Errorf("%s: replay guard %v, want %v", tc.source, got, tc.want)
		}
	}
}
