package main

import (
	"context"
	"io"

	"github.com/hookledger/hookledger/internal/local"
	"github.com/hookledger/hookledger/lab/effect"
	"github.com/hookledger/hookledger/lab/fault"
)

// runDev is `hooklab dev`: `hookledger dev` with the lab's own sample effect
// and, when HOOKLEDGER_FAULTS is set, AWS faults injected into every client.
// The chaos fleet and the demo's dev target run it; built with -tags
// crashpoints, its crash points are live.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return local.DevCommand{Program: "hooklab", Register: effect.Register, APIOptions: fault.APIOptions()}.Run(ctx, args, stdout, stderr)
}
