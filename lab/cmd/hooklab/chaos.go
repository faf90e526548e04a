package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/cli"

	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/lab/chaos"
)

const chaosHelp = `Drives the real pipeline (several hooklab dev processes sharing one table
and queue in the emulator) with signed deliveries and injects one fault kind
per phase:

  crash       a crash point armed in every process, rotating over all eight
              step boundaries; crashed processes are restarted
  duplicates  30% of events redelivered (in sequence, out of order, after they
              are done) and 50-way concurrent bursts
  aws         DynamoDB and SQS throttling, 500s, timeouts and timeouts after a
              successful write on a share of SDK attempts (--faults)
  slow        a payments API slower than the visibility timeout, finishing
              charges after the worker gave up
  interrupts  a few events whose process is killed in each of their first
              runs, more runs than MaxAttempts (half of them then failing
              once): each must end done, its effects applied once

--payload on-trouble (or both) runs the phases with HOOKLEDGER_PAYLOAD=on-trouble:
bodies are stored only when an event runs into trouble, and the run proves that
nothing is lost that way.

Every phase also sends invalid requests that must be refused without a trace,
events whose handler fails permanently (they must die and be replayable), and
late redeliveries. The payments stub counts charges per event; the run fails
on any duplicate effect, lost event, or stray record or message.

Needs a binary built with -tags crashpoints (make chaos builds one) and an
emulator at AWS_ENDPOINT_URL (default http://localhost:4566).
`

func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hooklab", "chaos", "chaos [--deliveries 4000] [--kinds all] [--concurrency 16] [--workers 3] [--timeout 5m] [--faults SPEC] [--seed N] [--parallel]", stderr)
	deliveries := fs.Int("deliveries", 4000, "valid deliveries in all, duplicates included, split evenly over the kinds (invalid requests come on top)")
	kinds := fs.String("kinds", "all", "fault kinds to run, comma-separated: crash, duplicates, aws, slow, interrupts (or all)")
	payloads := fs.String("payload", "on-trouble", "payload policies (HOOKLEDGER_PAYLOAD) every kind runs under, comma-separated: on-trouble (the shipped default), always (or both)")
	conc := fs.Int("concurrency", 16, "deliveries in flight at once")
	workers := fs.Int("workers", 3, "hooklab dev processes per phase, sharing the queue (at least 2)")
	timeout := fs.Duration("timeout", 5*time.Minute, "per phase: how long sending, and then settling, may take")
	faults := fs.String("faults", chaos.DefaultFaults, "HOOKLEDGER_FAULTS for the aws phase: service.kind=share,... (kinds: throttle, 500, timeout, timeout_after_write)")
	seed := fs.Uint64("seed", 0, "seed for the plan and the injected faults (0: random; printed)")
	parallel := fs.Bool("parallel", false, "run the phases at the same time (faster; each has its own table, queue and processes)")
	logDir := fs.String("log-dir", ".chaos", "directory for each phase's process logs")
	binary := fs.String("hookledger", "", "the hookledger binary whose replay command the phases run as an operator would (default: the one next to hooklab)")
	keep := fs.Bool("keep", false, "keep the phases' tables and queues in the emulator")
	synopsis := fs.Usage
	fs.Usage = func() {
		synopsis()
		fmt.Fprint(fs.Output(), "\n"+chaosHelp)
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	ks, err := chaos.ParseKinds(*kinds)
	if err == nil {
		err = chaos.ValidateFaults(*faults)
	}
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 2
	}
	pls := strings.Split(*payloads, ",")
	if *payloads == "both" {
		pls = []string{"always", "on-trouble"}
	}
	for i, pl := range pls {
		pls[i] = strings.TrimSpace(pl)
		if pls[i] != "always" && pls[i] != "on-trouble" {
			fmt.Fprintf(stderr, "chaos: --payload %q: want always, on-trouble or both\n", pl)
			return 2
		}
	}
	if *deliveries < 1 || *conc < 1 || *workers < 2 || *timeout <= 0 {
		fmt.Fprintln(stderr, "chaos: --deliveries and --concurrency must be positive, --workers at least 2, --timeout positive")
		return 2
	}
	if !inject.Enabled {
		fmt.Fprintln(stderr, "chaos: this binary has no crash points or fault injection; build it with `go build -tags crashpoints -o bin/proof/ ./cmd/hookledger ./lab/cmd/hooklab` (make chaos does)")
		return 2
	}
	exe, err := operatorBinary(*binary)
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "chaos: cannot find this binary, whose dev command the fleet runs: %v\n", err)
		return 1
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	if endpoint == "" {
		endpoint = "http://localhost:4566"
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	fmt.Fprintf(stdout, "chaos: payload %s, %d deliveries over %v against %s, %d dev processes per phase, seed %d, logs in %s\n",
		strings.Join(pls, "+"), *deliveries, ks, endpoint, *workers, *seed, *logDir)
	rep, err := chaos.Run(ctx, chaos.Config{
		Binary: exe, Lab: self, Endpoint: endpoint, Deliveries: *deliveries, Kinds: ks, Payloads: pls, Concurrency: *conc, Workers: *workers,
		Timeout: *timeout, Faults: *faults, Seed: *seed, Parallel: *parallel, LogDir: *logDir, Keep: *keep, Progress: stdout,
	})
	if rep != nil && len(rep.Phases) > 0 {
		fmt.Fprintln(stdout)
		rep.Print(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	if !rep.OK() {
		return 1
	}
	return 0
}
