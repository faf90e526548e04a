// Package reclaimer is the reclaimer Lambda's entry point: on its schedule
// it re-drives what fell between the cracks. A function's main is one
// call:
//
//	func main() { reclaimer.Main() }
package reclaimer

import (
	"context"
	"encoding/json"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/ledger"
)

// Main reads the configuration and serves the schedule's runs; a setting
// that cannot work, or a table of a newer record format, stops it at cold
// start, naming the fix.
func Main() {
	c, cfg := config.MustLoad("reclaimer")
	log := c.Logger(os.Stdout)
	h, err := reclaimer.FromConfig(c, cfg, log)
	if err != nil {
		config.Fatal("reclaimer configuration", err)
	}
	config.MustStart("reclaimer", c, cfg, ledger.WriteByUpdate, log)
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (reclaimer.Report, error) {
		return h.Handle(ctx, ev)
	})
}
