package config

import (
	"cmp"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/hookledger/hookledger/internal/trace"
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

// Tracer is the span recorder HOOKLEDGER_SPANS asks for, nil when it asks
// for none. Spans name the function, or hookledger-part outside Lambda.
func (c Config) Tracer(cfg aws.Config, part string, log *slog.Logger) (*trace.Tracer, error) {
	return trace.New(c.Spans, cfg, cmp.Or(c.FunctionName, "hookledger-"+part), log)
}
