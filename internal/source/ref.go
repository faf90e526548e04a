package source

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The schemes a secret reference may have. Every entry of a tenant's
// "secrets" list starts with one of them; nothing else is ever used as a
// signing key, so a misspelt reference cannot become the HMAC key.
const (
	SchemeLiteral        = "literal"        // literal:VALUE, the secret itself (local runs, tests)
	SchemeEnv            = "env"            // env:NAME, an environment variable of the function
	SchemeSSM            = "ssm"            // ssm:/parameter/name or an SSM parameter ARN (SecureString, decrypted)
	SchemeSecretsManager = "secretsmanager" // secretsmanager:name-or-ARN (a plaintext secret string)
)

// Ref is one parsed secret reference.
type Ref struct {
	Scheme string // one of the Scheme constants
	Name   string // the literal value, variable name, parameter name or secret id
}

// String renders the reference for logs and errors. A literal's value is
// never shown.
func (r Ref) String() string {
	if r.Scheme == SchemeLiteral {
		return fmt.Sprintf("literal:(%d bytes)", len(r.Name))
	}
	return r.Scheme + ":" + r.Name
}

// ErrBadRef marks a secret reference that cannot be used (startup error).
var ErrBadRef = errors.New("bad secret reference")

// schemeLike is how a string meant as a reference starts: a URI-style
// scheme and a colon ("ssm:", "SSM:", "arn:", "vault:").
var schemeLike = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// nearMisses maps lower-cased near misses to the scheme they were meant as.
var nearMisses = map[string]string{
	"ssm": SchemeSSM, "parameter": SchemeSSM, "parameterstore": SchemeSSM, "param": SchemeSSM,
	"secretsmanager": SchemeSecretsManager, "secretmanager": SchemeSecretsManager, "secrets-manager": SchemeSecretsManager,
	"secret-manager": SchemeSecretsManager, "sm": SchemeSecretsManager, "secrets": SchemeSecretsManager,
	"env": SchemeEnv, "environment": SchemeEnv, "literal": SchemeLiteral, "plain": SchemeLiteral, "value": SchemeLiteral,
}

// ParseRef parses one entry of a tenant's "secrets" list. Errors wrap
// ErrBadRef and say how to write the entry; they never contain a secret
// value.
func ParseRef(s string) (Ref, error) {
	m := schemeLike.FindString(s)
	if m == "" {
		if strings.TrimSpace(s) == "" {
			return Ref{}, fmt.Errorf("%w: empty entry", ErrBadRef)
		}
		hint := `write an inline secret as "literal:<secret>", or better keep it in SSM ("ssm:/path") or Secrets Manager ("secretsmanager:name")`
		if strings.HasPrefix(s, "/") {
			hint = `an SSM parameter is referenced as "ssm:` + s + `"`
		}
		return Ref{}, fmt.Errorf("%w: an entry of %d bytes has no scheme; %s", ErrBadRef, len(s), hint)
	}
	scheme, name := m[:len(m)-1], s[len(m):]
	switch scheme {
	case SchemeLiteral, SchemeEnv, SchemeSSM, SchemeSecretsManager:
	default:
		return Ref{}, unknownScheme(scheme, s)
	}
	if name == "" {
		return Ref{}, fmt.Errorf("%w: %q names nothing", ErrBadRef, scheme+":")
	}
	r := Ref{Scheme: scheme, Name: name}
	switch scheme {
	case SchemeEnv:
		if !envName.MatchString(name) {
			return Ref{}, fmt.Errorf("%w: env:%s: want an environment variable name such as env:STRIPE_SECRET", ErrBadRef, name)
		}
	case SchemeSSM:
		if strings.HasPrefix(name, "arn:") {
			if !ssmARN.MatchString(name) {
				return Ref{}, fmt.Errorf("%w: ssm:%s: not an SSM parameter ARN (arn:aws:ssm:REGION:ACCOUNT:parameter/NAME)", ErrBadRef, name)
			}
		} else if strings.Contains(name, "/") && !strings.HasPrefix(name, "/") {
			return Ref{}, fmt.Errorf("%w: ssm:%s: a parameter path starts with a slash: ssm:/%s", ErrBadRef, name, name)
		} else if strings.ContainsAny(name, " \t\r\n") {
			return Ref{}, fmt.Errorf("%w: ssm:%q: parameter names have no whitespace", ErrBadRef, name)
		}
	case SchemeSecretsManager:
		if strings.HasPrefix(name, "arn:") && !smARN.MatchString(name) {
			return Ref{}, fmt.Errorf("%w: secretsmanager:%s: not a Secrets Manager secret ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME)", ErrBadRef, name)
		}
		if strings.ContainsAny(name, " \t\r\n") {
			return Ref{}, fmt.Errorf("%w: secretsmanager:%q: secret names have no whitespace", ErrBadRef, name)
		}
	}
	return r, nil
}

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	ssmARN  = regexp.MustCompile(`^arn:aws[a-z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter/.+$`)
	smARN   = regexp.MustCompile(`^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:.+$`)
)

// unknownScheme explains a reference whose scheme is not one of ours. The
// whole entry is not quoted: it may be a secret that happens to contain a
// colon.
func unknownScheme(scheme, s string) error {
	lower := strings.ToLower(scheme)
	if lower == "arn" {
		service := ""
		if parts := strings.SplitN(s, ":", 4); len(parts) >= 3 {
			service = parts[2]
		}
		switch service {
		case "secretsmanager":
			return fmt.Errorf("%w: a bare ARN is not a reference; write \"secretsmanager:%s\"", ErrBadRef, s)
		case "ssm":
			return fmt.Errorf("%w: a bare ARN is not a reference; write \"ssm:%s\"", ErrBadRef, s)
		}
		return fmt.Errorf("%w: a bare ARN is not a reference; write \"secretsmanager:ARN\" or \"ssm:ARN\"", ErrBadRef)
	}
	if want, ok := nearMisses[lower]; ok {
		return fmt.Errorf("%w: unknown scheme %q; did you mean %q? (schemes are lower case: literal:, env:, ssm:, secretsmanager:)", ErrBadRef, scheme+":", want+":")
	}
	// Not quoted: the "scheme" may be the start of a secret.
	return fmt.Errorf("%w: an entry of %d bytes starts with an unknown scheme (%d bytes before its first colon); want literal:, env:, ssm: or secretsmanager: (a secret that contains a colon is written literal:<secret>)", ErrBadRef, len(s), len(scheme))
}
