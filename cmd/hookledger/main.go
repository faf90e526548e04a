// Command hookledger is the operator and developer CLI of hookledger: run
// the whole pipeline locally (dev), send signed webhooks (send, sign), verify
// a delivery (verify), read the ledger (inspect, list, console), replay dead events
// (replay), show or reset a resource's order (order), recover events a
// sender gave up on (reconcile) and create local resources (setup). The proof tooling (demo,
// chaos, bench, stubs) is a separate program, lab/cmd/hooklab.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookledger/hookledger/internal/cli"
)

func commands() map[string]cli.Command {
	return map[string]cli.Command{
		"dev":       {Summary: "serve the receiver on localhost, poll SQS into the processor, run the reclaimer on a ticker", Run: runDev},
		"send":      {Summary: "sign a webhook for a provider and post it (--repeat, --concurrency make duplicates)", Run: runSend},
		"sign":      {Summary: "print the headers a sender would send for a body", Run: plain(runSign)},
		"verify":    {Summary: "verify a delivery's signature and print its idempotency key", Run: plain(runVerify)},
		"inspect":   {Summary: "show one event's ledger record", Run: runInspect},
		"list":      {Summary: "list ledger records by source, tenant, status, type and time", Run: runList},
		"console":   {Summary: "serve a local web page over the ledger: events, timelines, what needs an operator, replays", Run: runConsole},
		"setup":     {Summary: "create the ledger table and queues in the emulator (or account) AWS_ENDPOINT_URL points at", Run: runSetup},
		"replay":    {Summary: "replay dead or failed events (by id, status or time range), or redrive a dead-letter queue", Run: runReplay},
		"reindex":   {Summary: "after an upgrade, put records an earlier release wrote into the indexes list and the console read", Run: runReindex},
		"order":     {Summary: "show or reset the position an InOrder route keeps for one resource", Run: runOrder},
		"reconcile": {Summary: "ask a provider's API what it sent and feed events the ledger lacks through the receiver (after an outage)", Run: runReconcile},
		"version":   {Summary: "print hookledger's version", Run: runVersion},
		"template":  {Summary: "write a project's template.yaml: the engine's at the version go.mod requires, with the project's resources.yaml", Run: runTemplate},
		"upgrade":   {Summary: "move a project to another hookledger version: go get, go mod tidy, template.yaml, the changelog between", Run: runUpgrade},
		"local":     {Summary: "deploy the project into a local emulator with IAM enforced, send signed test events, show the ledger", Run: runLocal},
	}
}

func plain(f func(args []string, stdout, stderr io.Writer) int) func(context.Context, []string, io.Writer, io.Writer) int {
	return func(_ context.Context, args []string, stdout, stderr io.Writer) int { return f(args, stdout, stderr) }
}

func program() cli.Program {
	return cli.Program{Name: "hookledger", Commands: commands(),
		Footer: "AWS_ENDPOINT_URL=http://localhost:4566 points every command at a local emulator."}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return program().Run(ctx, args, stdout, stderr)
}
