package main

import (
	"context"
	"io"

	"github.com/hookledger/hookledger/effect"
	"github.com/hookledger/hookledger/internal/local"
)

// runDev is `hookledger dev`: the whole pipeline here, with package effect.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return local.DevCommand{Program: "hookledger", Register: effect.Register}.Run(ctx, args, stdout, stderr)
}
