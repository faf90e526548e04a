// Command receiver is the receiver Lambda: API Gateway HTTP API in,
// signature verified, idempotency key claimed in the ledger, event enqueued.
// Configuration: see the README's configuration reference.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/receiver"
)

func main() {
	c, err := config.Load(os.Getenv)
	if err != nil {
		config.Fatal("receiver configuration", err)
	}
	cfg, err := config.LambdaAWS(os.Getenv)
	if err != nil {
		config.Fatal("receiver", err)
	}
	h, err := receiver.FromConfig(c, cfg, os.Getenv, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("receiver configuration", err)
	}
	lambda.Start(h.Handle)
}
