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
	"sort"
	"syscall"
)

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"demo":     {"run the pipeline end to end with duplicates and crashes, and check every charge and notification happened once", runDemo},
		"chaos":    {"inject crashes, duplicates, AWS faults and slow handlers into the real pipeline and check every effect happened once", runChaos},
		"bench":    {"measure requests, write units, dollars, cold start and throughput per event against the emulator", runBench},
		"payments": {"serve the local payments stub (honours Idempotency-Key) and notification stub (does not)", runPayments},
		"outage":   {"lose deliveries in a simulated outage and heal it with hookledger reconcile, checked by the payments stub", runOutage},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hooklab <command> [flags]\n\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'hooklab <command> --help' for a command's flags. The make targets (demo, chaos, bench)\nbuild and start everything these need.")
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
		fmt.Fprintf(stderr, "hooklab: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
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
		return "", fmt.Errorf("no hookledger binary at %s: build it with crash points next to hooklab (`go build -tags crashpoints -o bin/proof/ ./cmd/hookledger ./tools/cmd/hooklab`) or pass --hookledger PATH", given)
	}
	return given, nil
}
