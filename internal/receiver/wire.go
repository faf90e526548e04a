package receiver

import (
	"log/slog"

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
	srcs, err := source.Parse([]byte(c.SourcesJSON))
	if err != nil {
		return nil, err
	}
	secrets := &source.Secrets{SSM: ssm.NewFromConfig(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), Getenv: getenv}
	reg, err := source.NewRegistry(srcs, secrets)
	if err != nil {
		return nil, err
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
