// Package sdkconfig loads the AWS SDK configuration for the CLI and local
// runs: the full default chain, and dummy credentials for an emulator
// (AWS_ENDPOINT_URL). Functions use config.LambdaAWS, which links no chain.
package sdkconfig

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// Load reads the SDK configuration (dummy credentials for an emulator, outside Lambda).
func Load(ctx context.Context, getenv func(string) string) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if getenv("AWS_ENDPOINT_URL") != "" && getenv("AWS_ACCESS_KEY_ID") == "" && getenv("AWS_LAMBDA_FUNCTION_NAME") == "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(aws.CredentialsProviderFunc(
			func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "hookledger-local"}, nil
			})))
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
