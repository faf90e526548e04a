// Command hookledger is the operator and developer CLI of hookledger: run
// the whole pipeline locally (dev), send signed webhooks (send, sign), verify
// a delivery (verify), read the ledger (inspect, list), replay dead events
// (replay), recover events a sender gave up on (reconcile) and create local
// resources (setup). The proof tooling (demo,
// chaos, bench, stubs) is a separate program, tools/cmd/hooklab.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"dev":       {"serve the receiver on localhost, poll SQS into the processor, run the reclaimer on a ticker", runDev},
		"send":      {"sign a webhook for a provider and post it (--repeat, --concurrency make duplicates)", runSend},
		"sign":      {"print the headers a sender would send for a body", plain(runSign)},
		"verify":    {"verify a delivery's signature and print its idempotency key", plain(runVerify)},
		"inspect":   {"show one event's ledger record", runInspect},
		"list":      {"list ledger records, optionally by status", runList},
		"setup":     {"create the ledger table and queues in the emulator (or account) AWS_ENDPOINT_URL points at", runSetup},
		"replay":    {"replay dead or failed events (by key, status or time range), or redrive a dead-letter queue", runReplay},
		"reconcile": {"ask a provider's API what it sent and feed events the ledger lacks through the receiver (after an outage)", runReconcile},
	}
}

func plain(f func(args []string, stdout, stderr io.Writer) int) func(context.Context, []string, io.Writer, io.Writer) int {
	return func(_ context.Context, args []string, stdout, stderr io.Writer) int { return f(args, stdout, stderr) }
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hookledger <command> [flags]\n\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'hookledger <command> --help' for a command's flags.\nAWS_ENDPOINT_URL=http://localhost:4566 points every command at a local emulator.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(stdout)
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "hookledger: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
}
