package source

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Grants is what the deployed receiver's role may read, as template.yaml
// grants it from its parameters. The receiver checks every reference against
// it at cold start, so a reference outside the grant fails the deploy's
// first request with a message naming the fix, instead of answering every
// delivery 503 with AccessDenied.
type Grants struct {
	// SSMPath is SecretsParameterPath: parameters under it may be read.
	SSMPath string
	// SecretsManagerARN is SecretsManagerSecretArn: an ARN, or one ending
	// in /* (the template allows no other wildcard); the template grants it
	// and, for an exact ARN without Secrets Manager's random suffix,
	// ARN-?????? too.
	SecretsManagerARN string
	// SecretsManagerPrefix is SecretsManagerPrefix: secret names starting
	// with it, in the stack's own account and region.
	SecretsManagerPrefix string
	// Names are the variable and template parameters these grants come
	// from, for the messages (zero: the receiver's, ReceiverGrants).
	Names GrantNames
}

// GrantNames names where a role's secret grants are set, so that a refusal
// names the parameter to deploy with.
type GrantNames struct {
	Variable     string // the environment variable holding the grants
	SSMPath      string // the template parameter granting an SSM path
	SecretARN    string // the template parameter granting a secret's ARN
	SecretPrefix string // the template parameter granting a name prefix ("": none)
}

// ReceiverGrants are the receiver's (and the reconciler's signing secrets').
var ReceiverGrants = GrantNames{Variable: "HOOKLEDGER_SECRET_GRANTS", SSMPath: "SecretsParameterPath", SecretARN: "SecretsManagerSecretArn", SecretPrefix: "SecretsManagerPrefix"}

// ReconcileCredentialGrants are the reconciler's, for its provider API
// credentials.
var ReconcileCredentialGrants = GrantNames{Variable: "HOOKLEDGER_RECONCILE_GRANTS", SSMPath: "ReconcileCredentialsParameterPath", SecretARN: "ReconcileCredentialsSecretArn"}

func (g Grants) names() GrantNames {
	if g.Names == (GrantNames{}) {
		return ReceiverGrants
	}
	return g.Names
}

// ParseGrants reads HOOKLEDGER_SECRET_GRANTS, which template.yaml sets to
// "ssm=PATH;secretsmanager=ARN;secretsmanager_prefix=PREFIX" (each may be
// empty: nothing granted).
func ParseGrants(s string) (Grants, error) {
	return ParseGrantsFor(s, ReceiverGrants)
}

// ParseGrantsFor reads grants in ParseGrants's form that come from names.
func ParseGrantsFor(s string, names GrantNames) (Grants, error) {
	g := Grants{Names: names}
	for part := range strings.SplitSeq(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return Grants{}, fmt.Errorf("%s: %q: want key=value", names.Variable, part)
		}
		switch strings.TrimSpace(k) {
		case "ssm":
			g.SSMPath = strings.TrimSuffix(strings.TrimSpace(v), "/")
		case "secretsmanager":
			g.SecretsManagerARN = strings.TrimSpace(v)
		case "secretsmanager_prefix":
			g.SecretsManagerPrefix = strings.TrimSpace(v)
		default:
			return Grants{}, fmt.Errorf("%s: unknown key %q (want ssm, secretsmanager, secretsmanager_prefix)", names.Variable, k)
		}
	}
	return g, nil
}

// ErrNotGranted marks a reference the deployed role may not read.
var ErrNotGranted = errors.New("secret reference outside what the template grants")

// Check reports whether the receiver's role may read ref. Literal and env
// references need no grant.
func (g Grants) Check(ref Ref) error {
	switch ref.Scheme {
	case SchemeSSM:
		return g.checkSSM(ref)
	case SchemeSecretsManager:
		return g.checkSecretsManager(ref)
	}
	return nil
}

func (g Grants) checkSSM(ref Ref) error {
	name := ref.Name
	if strings.HasPrefix(name, "arn:") {
		_, after, _ := strings.Cut(name, ":parameter")
		name = after
	}
	n := g.names()
	if g.SSMPath == "" {
		return fmt.Errorf("%w: %s: the stack grants no SSM parameters; deploy with %s=%s (samconfig.toml parameter_overrides)",
			ErrNotGranted, ref, n.SSMPath, suggestPath(name))
	}
	if !strings.HasPrefix(name, g.SSMPath+"/") {
		return fmt.Errorf("%w: %s: the stack grants ssm:GetParameter only under %s/; move the parameter there (e.g. ssm:%s/%s) or deploy with %s=%s",
			ErrNotGranted, ref, g.SSMPath, g.SSMPath, path.Base(name), n.SSMPath, suggestPath(name))
	}
	return nil
}

// suggestPath is the parent path of an SSM parameter name.
func suggestPath(name string) string {
	if d := path.Dir(name); d != "/" && d != "." {
		return d
	}
	return "/hookledger/<stage>"
}

func (g Grants) checkSecretsManager(ref Ref) error {
	isARN := strings.HasPrefix(ref.Name, "arn:")
	name := ref.Name
	if isARN {
		_, name, _ = strings.Cut(ref.Name, ":secret:")
	}
	// The secret's real ARN ends in "-" and six random characters; the
	// reference may give the name or ARN with or without them.
	candidates := []string{name, name + "-AbCdEf"}
	if g.SecretsManagerPrefix != "" {
		for _, c := range candidates {
			if strings.HasPrefix(c, g.SecretsManagerPrefix) {
				return nil
			}
		}
	}
	if g.SecretsManagerARN != "" {
		grant := g.SecretsManagerARN
		target := []string{ref.Name, ref.Name + "-AbCdEf"}
		if !isARN {
			// A name resolves in the function's own account and region:
			// compare the part after "secret:" only.
			_, grant, _ = strings.Cut(grant, ":secret:")
			target = candidates
		}
		for _, pat := range []string{grant, grant + "-??????"} {
			for _, t := range target {
				if wildcard(pat, t) {
					return nil
				}
			}
		}
	}
	n := g.names()
	switch {
	case g.SecretsManagerARN == "" && g.SecretsManagerPrefix == "" && n.SecretPrefix == "":
		return fmt.Errorf("%w: %s: the stack grants no Secrets Manager secrets; deploy with %s=ARN (the secret's ARN, or one ending in /* for a path)",
			ErrNotGranted, ref, n.SecretARN)
	case g.SecretsManagerARN == "" && g.SecretsManagerPrefix == "":
		return fmt.Errorf("%w: %s: the stack grants no Secrets Manager secrets; deploy with %s=%s (or %s=ARN)",
			ErrNotGranted, ref, n.SecretPrefix, suggestPrefix(name), n.SecretARN)
	case n.SecretPrefix == "":
		return fmt.Errorf("%w: %s: outside the granted secrets (%s=%q); rename the secret or widen the grant",
			ErrNotGranted, ref, n.SecretARN, g.SecretsManagerARN)
	default:
		return fmt.Errorf("%w: %s: outside the granted secrets (%s=%q, %s=%q); rename the secret or widen the grant",
			ErrNotGranted, ref, n.SecretPrefix, g.SecretsManagerPrefix, n.SecretARN, g.SecretsManagerARN)
	}
}

func suggestPrefix(name string) string {
	if i := strings.LastIndex(name, "/"); i > 0 {
		return name[:i+1]
	}
	return "hookledger/<stage>/"
}

// wildcard matches s against an IAM resource pattern: * any run of
// characters, ? exactly one.
func wildcard(pat, s string) bool {
	for len(pat) > 0 {
		switch pat[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if wildcard(pat[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			pat, s = pat[1:], s[1:]
		default:
			if s == "" || pat[0] != s[0] {
				return false
			}
			pat, s = pat[1:], s[1:]
		}
	}
	return s == ""
}
