// Command processor is the proof lab's processor Lambda: the template's
// processor wired to the lab's own sample effect (lab/effect) instead of the
// user's. The lab's deploys (make e2e, make demo) put this binary in place of
// the template's processor, so they prove the pipeline whatever effect/ holds.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/lab/effect"
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
