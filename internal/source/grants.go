package source

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Grants is what a deployed function's role may read, as template.yaml
// grants it from SecretsPrefix. Each function checks its references against
// it at cold start: a reference outside fails the first request, naming the
// fix, instead of answering every delivery 503 (AccessDenied).
type Grants struct {
	// SSMPath: parameters under it may be read ("/hookledger/prod", from
	// SecretsPrefix hookledger/prod).
	SSMPath string
	// SSMName: the one parameter of that name may be read (the bus door's
	// grant: the sources JSON at /PREFIX/sources, nothing else).
	SSMName string
	// SecretsManagerPrefix: secret names starting with it, in the stack's
	// own account and region ("hookledger/prod/").
	SecretsManagerPrefix string
	// SecretsManagerName: the one secret of that name, in the stack's own
	// account and region (the bus door's grant: the sources JSON).
	SecretsManagerName string
	// SecretsManagerARN: one secret's ARN, or one ending in /* (no other
	// wildcard), for a secret outside the prefix or in another account. The
	// template does not grant one; a template whose role was edited to
	// grant such a secret says so here. For an exact ARN without Secrets
	// Manager's random suffix the role must also grant ARN-??????.
	SecretsManagerARN string
	// Except is a path under both prefixes the role is denied ("reconcile/",
	// ReconcileCredentialsPath): a reference under it is refused.
	Except string
	// Names says where these grants come from, for the messages (zero: the
	// receiver's, ReceiverGrants).
	Names GrantNames
}

// GrantNames names where a role's secret grants are set, so that a refusal
// names what to change.
type GrantNames struct {
	Variable  string // the environment variable holding the grants
	Parameter string // the template parameter they come from
	// Under is the path under the prefix these references belong in (""
	// anywhere): "reconcile/" for the reconciler's API credentials.
	Under string
}

// ReconcileCredentialsPath is where, under SecretsPrefix, the reconciler's
// provider API credentials live: only the reconciler's role may read it
// (template.yaml denies it to the receiver's and the processor's), and the
// reconciler reads its credentials nowhere else.
const ReconcileCredentialsPath = "reconcile/"

// ReceiverGrants are the receiver's, the processor's (effect settings) and
// the reconciler's for signing secrets.
var ReceiverGrants = GrantNames{Variable: "HOOKLEDGER_SECRET_GRANTS", Parameter: "SecretsPrefix"}

// ReconcileCredentialGrants are the reconciler's, for its provider API
// credentials.
var ReconcileCredentialGrants = GrantNames{Variable: "HOOKLEDGER_RECONCILE_GRANTS", Parameter: "SecretsPrefix", Under: ReconcileCredentialsPath}

func (g Grants) names() GrantNames {
	if g.Names == (GrantNames{}) {
		return ReceiverGrants
	}
	return g.Names
}

// ParseGrants reads HOOKLEDGER_SECRET_GRANTS, which template.yaml sets to
// "ssm=/PREFIX;secretsmanager_prefix=PREFIX/;except=reconcile/" (each may be
// empty: nothing granted), and which may also carry
// "secretsmanager=ARN".
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
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "ssm":
			g.SSMPath = strings.TrimSuffix(v, "/")
		case "ssm_name":
			g.SSMName = v
		case "secretsmanager":
			g.SecretsManagerARN = v
		case "secretsmanager_prefix":
			g.SecretsManagerPrefix = v
		case "secretsmanager_name":
			g.SecretsManagerName = v
		case "except":
			if v != "" && !strings.HasSuffix(v, "/") {
				v += "/"
			}
			g.Except = v
		default:
			return Grants{}, fmt.Errorf("%s: unknown key %q (want ssm, ssm_name, secretsmanager, secretsmanager_prefix, secretsmanager_name, except)", names.Variable, k)
		}
	}
	return g, nil
}

// ErrNotGranted marks a reference the deployed role may not read.
var ErrNotGranted = errors.New("secret reference outside what the template grants")

// Check reports whether the role may read ref. Literal and env references
// need no grant.
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
	if g.SSMName != "" {
		if name == g.SSMName {
			return nil
		}
		if g.SSMPath == "" {
			return fmt.Errorf("%w: %s: this function may read only the parameter %s; store the document there", ErrNotGranted, ref, g.SSMName)
		}
	}
	if g.SSMPath == "" {
		return fmt.Errorf("%w: %s: the stack grants no secrets; deploy with %s=%s (samconfig.toml parameter_overrides)",
			ErrNotGranted, ref, n.Parameter, n.suggest(path.Dir(name)))
	}
	if !strings.HasPrefix(name, g.SSMPath+"/") {
		return fmt.Errorf("%w: %s: the stack grants ssm:GetParameter only under %s/; move the parameter there (e.g. ssm:%s/%s) or deploy with %s=%s",
			ErrNotGranted, ref, g.SSMPath, g.SSMPath, path.Base(name), n.Parameter, n.suggest(path.Dir(name)))
	}
	if g.Except != "" && strings.HasPrefix(name, g.SSMPath+"/"+g.Except) {
		return fmt.Errorf("%w: %s: %s/%s holds the reconciler's provider API credentials, which this function's role is denied; keep this parameter elsewhere under %s/",
			ErrNotGranted, ref, g.SSMPath, g.Except, g.SSMPath)
	}
	return nil
}

// suggest is the SecretsPrefix that would grant a reference whose parent
// path (SSM) or name prefix (Secrets Manager) is dir.
func (n GrantNames) suggest(dir string) string {
	dir = strings.Trim(dir, "/")
	if n.Under != "" {
		dir = strings.TrimSuffix(dir, "/"+strings.TrimSuffix(n.Under, "/"))
	}
	if dir == "" || dir == "." {
		return "hookledger/<stage>"
	}
	return dir
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
	if n := g.SecretsManagerName; n != "" {
		if name == n || wildcard(n+"-??????", name) {
			return nil
		}
		if g.SecretsManagerPrefix == "" && g.SecretsManagerARN == "" {
			return fmt.Errorf("%w: %s: this function may read only the secret %s; store the document there", ErrNotGranted, ref, n)
		}
	}
	if p := g.SecretsManagerPrefix; p != "" && strings.HasPrefix(name, p) {
		if g.Except != "" && strings.HasPrefix(name, p+g.Except) {
			return fmt.Errorf("%w: %s: secrets named %s%s... hold the reconciler's provider API credentials, which this function's role is denied; name this secret otherwise under %s",
				ErrNotGranted, ref, p, g.Except, p)
		}
		return nil
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
	dir := ""
	if i := strings.LastIndex(name, "/"); i > 0 {
		dir = name[:i]
	}
	switch {
	case g.SecretsManagerARN == "" && g.SecretsManagerPrefix == "":
		return fmt.Errorf("%w: %s: the stack grants no secrets; deploy with %s=%s (samconfig.toml parameter_overrides)",
			ErrNotGranted, ref, n.Parameter, n.suggest(dir))
	case g.SecretsManagerARN == "":
		return fmt.Errorf("%w: %s: the stack grants secretsmanager:GetSecretValue only to the secrets named %s...; rename the secret (e.g. %s%s) or deploy with %s=%s",
			ErrNotGranted, ref, g.SecretsManagerPrefix, g.SecretsManagerPrefix, path.Base(name), n.Parameter, n.suggest(dir))
	default:
		return fmt.Errorf("%w: %s: outside the granted secrets (the names %s..., and %s from the template's own grant); rename the secret or widen the grant",
			ErrNotGranted, ref, g.SecretsManagerPrefix, g.SecretsManagerARN)
	}
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
