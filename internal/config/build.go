package config

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/hookledger/hookledger/effect"
	"github.com/hookledger/hookledger/internal/fault"
	"github.com/hookledger/hookledger/internal/metric"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/source"
	"github.com/hookledger/hookledger/ledger"
)

// Logger returns a JSON slog logger at the configured level.
func (c Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(strings.ToUpper(c.LogLevel)))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// AWS loads the SDK configuration from the environment (AWS_ENDPOINT_URL
// points it at an emulator). Outside Lambda, with an endpoint set and no
// credentials, it uses dummy ones so that local runs need no AWS account.
func AWS(ctx context.Context, getenv func(string) string) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if getenv("AWS_ENDPOINT_URL") != "" && getenv("AWS_ACCESS_KEY_ID") == "" && getenv("AWS_LAMBDA_FUNCTION_NAME") == "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(aws.CredentialsProviderFunc(
			func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "hookledger-local"}, nil
			})))
	}
	if faults := fault.APIOptions(); len(faults) > 0 {
		opts = append(opts, awsconfig.WithAPIOptions(faults)) // fault-injection builds only
	}
	if getenv("AWS_REGION") == "" && getenv("AWS_DEFAULT_REGION") == "" {
		opts = append(opts, awsconfig.WithRegion("us-east-1"))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}

// metrics returns the EMF emitter (stdout, as Lambda ships it to CloudWatch
// Logs), or nil when metrics are off.
func (c Config) metrics() *metric.Emitter {
	if !c.EmitMetrics {
		return nil
	}
	return metric.New(os.Stdout, c.Stage)
}

// Ledger builds the ledger on a DynamoDB client from cfg.
func (c Config) Ledger(cfg aws.Config) (*ledger.Ledger, error) {
	return ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
}

// Receiver builds the receiver's handler.
func (c Config) Receiver(cfg aws.Config, getenv func(string) string, log *slog.Logger) (*receiver.Handler, error) {
	if err := c.ValidateReceiver(); err != nil {
		return nil, err
	}
	srcs, err := c.Sources()
	if err != nil {
		return nil, err
	}
	secrets := &source.Secrets{SSM: ssm.NewFromConfig(cfg), SecretsManager: secretsmanager.NewFromConfig(cfg), Getenv: getenv}
	reg, err := source.NewRegistry(srcs, secrets)
	if err != nil {
		return nil, err
	}
	l, err := c.Ledger(cfg)
	if err != nil {
		return nil, err
	}
	return &receiver.Handler{
		Sources: reg, Ledger: l, Queue: &queue.Sender{API: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		MaxBody: c.MaxBody, Mismatch: c.Mismatch, Log: log, Metrics: c.metrics(),
	}, nil
}

// Processor builds the processor's handler with the routes of package
// effect.
func (c Config) Processor(cfg aws.Config, log *slog.Logger) (*processor.Handler, error) {
	if err := c.ValidateProcessor(); err != nil {
		return nil, err
	}
	l, err := c.Ledger(cfg)
	if err != nil {
		return nil, err
	}
	routes := processor.NewRouter()
	effect.Register(routes, effect.Config{PaymentsURL: c.PaymentsURL})
	return &processor.Handler{Ledger: l, Routes: routes, Lease: c.Lease, MaxAttempts: c.MaxAttempts, Log: log, Metrics: c.metrics()}, nil
}

// Reclaimer builds the reclaimer's handler; with PAYMENTS_URL set it checks
// the demo charge downstream before re-running an expired lease.
func (c Config) Reclaimer(cfg aws.Config, log *slog.Logger) (*reclaimer.Handler, error) {
	if err := c.ValidateReclaimer(); err != nil {
		return nil, err
	}
	l, err := c.Ledger(cfg)
	if err != nil {
		return nil, err
	}
	h := &reclaimer.Handler{
		Ledger: l, Queue: &queue.Sender{API: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		PerShard: c.ReclaimBatch, MaxReclaims: c.MaxReclaims, Log: log, Metrics: c.metrics(),
	}
	if c.PaymentsURL != "" {
		h.Check = &effect.ChargeCheck{BaseURL: c.PaymentsURL, Client: &http.Client{Timeout: 5 * time.Second}}
	}
	return h, nil
}

// Fatal prints a configuration error the way every entry point does and
// exits 2.
func Fatal(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(2)
}
