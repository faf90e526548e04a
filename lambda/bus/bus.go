// Package bus is the bus door's Lambda entry point (optional,
// InboundEventBus): events from an EventBridge bus are claimed and
// enqueued as deliveries are. A function's main is one call:
//
//	func main() { bus.Main() }
package bus

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/bus"
	"github.com/hookledger/hookledger/internal/config"
)

// Main reads the configuration and serves the intake queue; a setting that
// cannot work stops it at cold start, naming the fix.
func Main() {
	c, cfg := config.MustLoad("bus")
	h, err := bus.FromConfig(c, cfg, os.Getenv, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("bus configuration", err)
	}
	lambda.Start(h.Handle)
}
