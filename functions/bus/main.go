// Command bus is the bus door's Lambda: EventBridge events from the intake
// queue (a rule on the bus the template's InboundEventBus names), each
// routed to its source and tenant, keyed, claimed in the ledger and
// enqueued as the receiver does; what cannot be taken is parked on the
// bus's dead-letter queue. Configuration: docs/eventbridge.md.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/bus"
	"github.com/hookledger/hookledger/internal/config"
)

func main() {
	c, err := config.Load(os.Getenv)
	if err != nil {
		config.Fatal("bus configuration", err)
	}
	cfg, err := config.LambdaAWS(os.Getenv)
	if err != nil {
		config.Fatal("bus", err)
	}
	h, err := bus.FromConfig(c, cfg, os.Getenv, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("bus configuration", err)
	}
	lambda.Start(h.Handle)
}
