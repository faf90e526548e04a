package config

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/internal/trace"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/version"
)

// LambdaAWS builds a function's SDK configuration from what the runtime sets
// (region, the role's credentials), plus AWS_ENDPOINT_URL for emulators. It
// does not link the credential chain (profiles, SSO, IMDS), which a
// function never uses: binaries and cold starts stay small.
func LambdaAWS(getenv func(string) string) (aws.Config, error) {
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, errors.New("AWS_REGION is not set (the Lambda runtime sets it; set it when running the binary yourself)")
	}
	key, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if key == "" || secret == "" {
		return aws.Config{}, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (the Lambda runtime sets them from the execution role)")
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(key, secret, getenv("AWS_SESSION_TOKEN"))),
	}
	if ep := getenv("AWS_ENDPOINT_URL"); ep != "" {
		cfg.BaseEndpoint = aws.String(ep)
	}
	return cfg, nil
}

// MustLoad reads a function's configurations, or stops the cold start naming what is wrong.
func MustLoad(function string) (Config, aws.Config) {
	c, err := Load(os.Getenv)
	if err != nil {
		Fatal(function+" configuration", err)
	}
	cfg, err := LambdaAWS(os.Getenv)
	if err != nil {
		Fatal(function, err)
	}
	return c, cfg
}

// formatCheckTimeout bounds the cold start's read of the table's format.
const formatCheckTimeout = 10 * time.Second

// Start checks the table's record format (ledger.UseFormat, raising it
// with w, the write the function's role has) and logs the function's one
// cold-start line with the version. A table of a newer format is an error
// naming the release to deploy.
func Start(ctx context.Context, function string, c Config, cfg aws.Config, w ledger.FormatWrite, log *slog.Logger) error {
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, formatCheckTimeout)
	defer cancel()
	if _, err := l.UseFormat(ctx, w); err != nil {
		return err
	}
	log.Info("cold start", "function", function, "version", version.Version, "format", ledger.Format)
	return nil
}

// MustStart is Start for a function's main: an error stops the cold start.
func MustStart(function string, c Config, cfg aws.Config, w ledger.FormatWrite, log *slog.Logger) {
	if err := Start(context.Background(), function, c, cfg, w, log); err != nil {
		Fatal(function, err)
	}
}

// Tracer is the span recorder HOOKLEDGER_SPANS asks for, nil when it asks
// for none. Spans name the function, or hookledger-part outside Lambda.
func (c Config) Tracer(cfg aws.Config, part string, log *slog.Logger) (*trace.Tracer, error) {
	return trace.New(c.Spans, cfg, cmp.Or(c.FunctionName, "hookledger-"+part), log)
}
