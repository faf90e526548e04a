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
	"github.com/hookledger/hookledger/ledger"
)

// Main reads the configuration and serves the intake queue; a setting that
// cannot work, or a table of a newer record format, stops it at cold start,
// naming the fix.
func Main() {
	c, cfg := config.MustLoad("bus")
	log := c.Logger(os.Stdout)
	h, err := bus.FromConfig(c, cfg, os.Getenv, log)
	if err != nil {
		config.Fatal("bus configuration", err)
	}
	config.MustStart("bus", c, cfg, ledger.WriteByPut, log)
	lambda.Start(h.Handle)
}
