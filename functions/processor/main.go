// Command processor is the processor Lambda: SQS batches in, one lease per
// event, the effects of package effect run once in effect, per-message
// failures reported. Configuration: docs/configuration.md.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/effect"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/processor"
)

func main() {
	c, err := config.Load(os.Getenv)
	if err != nil {
		config.Fatal("processor configuration", err)
	}
	cfg, err := config.LambdaAWS(os.Getenv)
	if err != nil {
		config.Fatal("processor", err)
	}
	settings, err := processor.EffectSettings(c, cfg, os.Getenv, false)
	if err != nil {
		config.Fatal("effect settings", err)
	}
	routes := hookledger.NewRouter()
	if err := effect.Register(routes, settings); err != nil {
		config.Fatal("effect settings", err)
	}
	h, err := processor.FromConfig(c, cfg, routes, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("processor configuration", err)
	}
	lambda.Start(h.Handle)
}
