// Command hooklab is hookledger's proof tooling: the demo (the pipeline end
// to end with duplicates and crashes, checked by an independent oracle), the
// fault-injection harness (chaos), the benchmarks (bench), and the local
// payments and notification stubs the demo effects call (payments). None of
// it ships in the Lambdas; the operator CLI is cmd/hookledger.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/hookledger/hookledger/internal/cli"
)

func commands() map[string]cli.Command {
	return map[string]cli.Command{
		"dev":          {Summary: "hookledger dev with the lab's sample effect and AWS fault injection (HOOKLEDGER_FAULTS): the chaos fleet's processes", Run: runDev},
		"demo":         {Summary: "run the pipeline end to end with duplicates and crashes, and check every charge and notification happened once", Run: runDemo},
		"chaos":        {Summary: "inject crashes, duplicates, AWS faults and slow handlers into the real pipeline and check every effect happened once", Run: runChaos},
		"bench":        {Summary: "measure requests, write units, dollars, cold start and throughput per event against the emulator", Run: runBench},
		"payments":     {Summary: "serve the local payments stub (honours Idempotency-Key) and notification stub (does not)", Run: runPayments},
		"outage":       {Summary: "lose deliveries in a simulated outage and heal it with hookledger reconcile, checked by the payments stub", Run: runOutage},
		"queue-outage": {Summary: "lose every message on the queue for hours (injected clock) and check the reclaimer recovers within two minutes of its return", Run: runQueueOutage},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli.Program{Name: "hooklab", Commands: commands(),
		Footer: "The make targets (demo, chaos, bench, outage) build and start everything these need."}.Run(ctx, args, stdout, stderr)
}

// operatorBinary finds the hookledger binary whose dev and replay commands
// the demo and the chaos harness run as child processes: the path given, or
// the hookledger next to this binary (make builds both, with crash points,
// into bin/proof/).
func operatorBinary(given string) (string, error) {
	if given == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("cannot find this binary: %w", err)
		}
		given = filepath.Join(filepath.Dir(self), "hookledger")
	}
	if st, err := os.Stat(given); err != nil || st.IsDir() {
		return "", fmt.Errorf("no hookledger binary at %s: build it with crash points next to hooklab (`go build -tags crashpoints -o bin/proof/ ./cmd/hookledger ./lab/cmd/hooklab`) or pass --hookledger PATH", given)
	}
	return given, nil
}
