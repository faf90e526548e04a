package source

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// SourcesJSON returns the sources JSON from HOOKLEDGER_SOURCES's value v:
// v itself, or the document an "ssm:" or "secretsmanager:" reference names
// (checked against grants first, when given). That is the way past
// Lambda's 4 KB environment: an SSM advanced parameter holds 8 KB, a
// Secrets Manager secret 64 KB.
func SourcesJSON(v string, secrets *Secrets, grants *Grants) (string, error) {
	t := strings.TrimSpace(v)
	if !strings.HasPrefix(t, SchemeSSM+":") && !strings.HasPrefix(t, SchemeSecretsManager+":") {
		return v, nil
	}
	ref, err := ParseRef(t)
	if err != nil {
		return "", fmt.Errorf("HOOKLEDGER_SOURCES: %w", err)
	}
	if grants != nil {
		if err := grants.Check(ref); err != nil {
			return "", fmt.Errorf("HOOKLEDGER_SOURCES: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := secrets.Document(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("HOOKLEDGER_SOURCES: read the sources JSON from %s: %w", ref, err)
	}
	return raw, nil
}

// Load reads the sources JSON (SourcesJSON, within secretGrants when set),
// parses it and builds every source's verifier once, at cold start. grants
// is nil when none are configured.
func Load(sourcesJSON, secretGrants string, secrets *Secrets) (srcs map[string]Source, reg *Registry, grants *Grants, err error) {
	if secretGrants != "" {
		g, err := ParseGrants(secretGrants)
		if err != nil {
			return nil, nil, nil, err
		}
		grants = &g
	}
	raw, err := SourcesJSON(sourcesJSON, secrets, grants)
	if err != nil {
		return nil, nil, nil, err
	}
	if srcs, err = Parse([]byte(raw)); err != nil {
		return nil, nil, nil, err
	}
	if reg, err = NewRegistry(srcs, secrets); err != nil {
		return nil, nil, nil, err
	}
	return srcs, reg, grants, nil
}
