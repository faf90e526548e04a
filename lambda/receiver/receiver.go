// Package receiver is the receiver Lambda's entry point; a function's main
// is one call: receiver.Main().
package receiver

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/receiver"
)

// Main reads the configuration and serves deliveries; a setting that
// cannot work stops it at cold start, naming the fix.
func Main() {
	c, cfg := config.MustLoad("receiver")
	h, err := receiver.FromConfig(c, cfg, os.Getenv, c.Logger(os.Stdout))
	if err != nil {
		config.Fatal("receiver configuration", err)
	}
	lambda.Start(h.Handle)
}
