// Command reconciler is the scheduled reconciler Lambda (off by default in
// template.yaml): it asks each configured provider's API which events it
// sent or failed to send, and feeds those the ledger lacks through the
// receiver function. Configuration: docs/reconcile.md.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/reconcile"
)

func main() {
	c, err := config.Load(os.Getenv)
	if err != nil {
		config.Fatal("reconciler configuration", err)
	}
	cfg, err := config.LambdaAWS(os.Getenv)
	if err != nil {
		config.Fatal("reconciler", err)
	}
	h, err := reconcile.FromConfig(c, reconcile.LoadSettings(os.Getenv), cfg, os.Getenv, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("reconciler configuration", err)
	}
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (reconcile.Summary, error) {
		return h.Handle(ctx, ev)
	})
}
