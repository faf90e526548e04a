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
	"github.com/hookledger/hookledger/ledger"
)

// Main reads the configuration and serves the schedule's runs; a setting
// that cannot work, or a table of a newer record format, stops it at cold
// start, naming the fix.
func Main() {
	c, cfg := config.MustLoad("reconciler")
	log := c.Logger(os.Stdout)
	h, err := reconcile.FromConfig(c, reconcile.LoadSettings(os.Getenv), cfg, os.Getenv, log)
	if err != nil {
		config.Fatal("reconciler configuration", err)
	}
	config.MustStart("reconciler", c, cfg, ledger.ReadOnly, log)
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (reconcile.Summary, error) {
		return h.Handle(ctx, ev)
	})
}
