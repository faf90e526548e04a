// Package reconciler is the reconciler Lambda's entry point (optional,
// ReconcileConfig): on its schedule it asks the providers' APIs for events
// the ledger never saw. A function's main is one call:
//
//	func main() { reconciler.Main() }
package reconciler

import (
	"context"
	"encoding/json"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/reconcile"
)

// Main reads the configuration and serves the schedule's runs; a setting
// that cannot work stops it at cold start, naming the fix.
func Main() {
	c, cfg := config.MustLoad("reconciler")
	h, err := reconcile.FromConfig(c, reconcile.LoadSettings(os.Getenv), cfg, os.Getenv, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("reconciler configuration", err)
	}
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (reconcile.Summary, error) {
		return h.Handle(ctx, ev)
	})
}
