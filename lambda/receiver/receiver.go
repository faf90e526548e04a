// Package receiver is the receiver Lambda's entry point; a function's main
// is one call: receiver.Main().
package receiver

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/ledger"
)

// Main reads the configuration and serves deliveries; a setting that cannot
// work, or a table of a newer record format, stops it at cold start, naming
// the fix.
func Main() {
	c, cfg := config.MustLoad("receiver")
	log := c.Logger(os.Stdout)
	h, err := receiver.FromConfig(c, cfg, os.Getenv, log)
	if err != nil {
		config.Fatal("receiver configuration", err)
	}
	config.MustStart("receiver", c, cfg, ledger.WriteByPut, log)
	lambda.Start(h.Handle)
}
