// Command processor is the processor Lambda: SQS batches in, one lease per
// event, the effects of package effect run once in effect, per-message
// failures reported. Configuration: see the README's configuration reference.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/config"
)

func main() {
	c, err := config.Load(os.Getenv)
	if err != nil {
		config.Fatal("processor configuration", err)
	}
	cfg, err := config.LambdaAWS(os.Getenv)
	if err != nil {
		config.Fatal("processor", err)
	}
	h, err := c.Processor(cfg, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("processor configuration", err)
	}
	lambda.Start(h.Handle)
}
