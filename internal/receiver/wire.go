package receiver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
)

// FromConfig builds the receiver from the configuration: it validates it,
// parses the sources and builds every verifier once (cold start), and
// creates the SSM, Secrets Manager, DynamoDB and SQS clients. It lives here,
// not in package config, so that the processor's and reclaimer's binaries
// do not link the secret stores' SDKs.
func FromConfig(c config.Config, cfg aws.Config, getenv func(string) string, log *slog.Logger) (*Handler, error) {
	if err := c.ValidateReceiver(); err != nil {
		return nil, err
	}
	secrets := &source.Secrets{SSM: ssm.NewFromConfig(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), Getenv: getenv}
	var grants *source.Grants
	if c.SecretGrants != "" {
		g, err := source.ParseGrants(c.SecretGrants)
		if err != nil {
			return nil, err
		}
		grants = &g
	}
	raw, err := sourcesJSON(c.SourcesJSON, secrets, grants)
	if err != nil {
		return nil, err
	}
	srcs, err := source.Parse([]byte(raw))
	if err != nil {
		return nil, err
	}
	reg, err := source.NewRegistry(srcs, secrets)
	if err != nil {
		return nil, err
	}
	if grants != nil {
		if err := reg.CheckGrants(*grants); err != nil {
			return nil, fmt.Errorf("sources config: every delivery of these tenants would get 503 on AWS (AccessDenied):\n%w", err)
		}
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		return nil, err
	}
	return &Handler{
		Sources: reg, Ledger: l, Queue: &queue.Sender{API: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		MaxBody: c.MaxBody, Mismatch: c.Mismatch, Log: log, Metrics: c.Metrics(),
	}, nil
}

// sourcesJSON returns the sources JSON: HOOKLEDGER_SOURCES itself, or, when
// it is an "ssm:" or "secretsmanager:" reference, the value stored there.
// That is the way past Lambda's 4 KB limit on a function's environment:
// an SSM advanced-tier parameter holds 8 KB, a Secrets Manager secret 64 KB.
func sourcesJSON(v string, secrets *source.Secrets, grants *source.Grants) (string, error) {
	t := strings.TrimSpace(v)
	if !strings.HasPrefix(t, "ssm:") && !strings.HasPrefix(t, "secretsmanager:") {
		return v, nil
	}
	ref, err := source.ParseRef(t)
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
