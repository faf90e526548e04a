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
)

// Main reads the configuration and serves the schedule's runs; a setting
// that cannot work stops it at cold start, naming the fix.
func Main() {
	c, cfg := config.MustLoad("reclaimer")
	h, err := reclaimer.FromConfig(c, cfg, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("reclaimer configuration", err)
	}
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (reclaimer.Report, error) {
		return h.Handle(ctx, ev)
	})
}
