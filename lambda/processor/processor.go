// Package processor is the processor Lambda's entry point: SQS batches in,
// one lease per event, the effects that register adds run once in effect,
// per-message failures reported. A function's main is one call:
//
//	func main() { processor.Main(effect.Register) }
//
// Configuration: docs/configuration.md.
package processor

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/ledger"
)

// Main reads the configuration, runs register with the effects' settings,
// and serves the queue's batches. A setting that cannot work, or a table of
// a newer record format, stops it at cold start, naming the fix; events wait
// on the queue, untouched.
func Main(register func(*hookledger.Router, *hookledger.Settings) error) {
	c, cfg := config.MustLoad("processor")
	log := c.Logger(os.Stdout)
	effects, err := processor.Effects(c, cfg, os.Getenv, false, register)
	if err != nil {
		config.Fatal("effect settings", err)
	}
	h, err := processor.FromConfig(c, cfg, effects.Routes, log)
	if err != nil {
		config.Fatal("processor configuration", err)
	}
	config.MustStart("processor", c, cfg, ledger.WriteByUpdate, log)
	lambda.Start(h.Handle)
}
