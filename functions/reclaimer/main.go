// Command reclaimer is the scheduled reclaimer Lambda: overdue records found
// through the ledger's due index are re-enqueued, reset or marked dead.
// Configuration: see the README's configuration reference.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/reclaimer"
)

func main() {
	c, err := config.Load(os.Getenv)
	if err != nil {
		config.Fatal("reclaimer configuration", err)
	}
	cfg, err := config.LambdaAWS(os.Getenv)
	if err != nil {
		config.Fatal("reclaimer", err)
	}
	h, err := reclaimer.FromConfig(c, cfg, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("reclaimer configuration", err)
	}
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (reclaimer.Report, error) {
		return h.Handle(ctx, ev)
	})
}
