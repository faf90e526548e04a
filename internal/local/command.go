package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/inject"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
)

// Dev's defaults: the flags' values when not given.
const (
	DefaultAddr            = "127.0.0.1:8080"
	DefaultReclaimEvery    = 10 * time.Second
	DefaultFunctionTimeout = 30 * time.Second
	DefaultPollers         = 2
)

// DevCommand is `hookledger dev`: the whole pipeline in one process, with
// the effects Register adds. The proof lab runs the same command with its
// own sample effect and its AWS fault middleware (APIOptions).
type DevCommand struct {
	Program    string                          // the program's name in usage lines, e.g. "hookledger"
	Register   any                             // the effects' func(*hookledger.Router, *hookledger.Settings) error
	APIOptions []func(*middleware.Stack) error // added to every AWS client
}

// The crash points' variables (internal/inject), and the supervised child's mark.
const (
	crashEnv     = "HOOKLEDGER_CRASH"
	crashMarkEnv = "HOOKLEDGER_CRASH_MARK"
	crashLogEnv  = "HOOKLEDGER_CRASH_LOG"
	childEnv     = "HOOKLEDGER_DEV_CHILD"
)

// Run parses args and runs the pipeline until ctx ends: exit 2 on bad usage or configuration, 1 later.
func (d DevCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code := d.parse(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if f.crash != "" && os.Getenv(childEnv) == "" {
		return d.supervise(ctx, f.crash, f.points, stderr)
	}
	if f.crash == "" && f.points {
		os.Setenv(crashLogEnv, "1")
	}
	c, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err) // each error names its fix
		return 2
	}
	if err := c.ValidateReceiver(); err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		if c.QueueURL == "" { // what setup creates, and prints
			fmt.Fprintln(stderr, "Run `hookledger setup` to create the table and queues; it prints the variables to export.")
		}
		return 2
	}
	log := c.Logger(stdout)
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		return cli.Fail(stderr, "dev", 1, err)
	}
	cfg.APIOptions = append(cfg.APIOptions, d.APIOptions...)
	if code := deadLetterQueue(ctx, &c, cfg, stderr); code >= 0 {
		return code
	}
	effects := engine.Effects{RouteNames: []string{}, SettingNames: []string{}}
	if f.run[partProcessor] { // only the processor's effects read their settings
		if effects, err = processor.Effects(c, cfg, os.Getenv, true, d.Register); err != nil {
			return cli.Fail(stderr, "dev", 2, err)
		}
	}
	p, err := New(c, cfg, effects.Routes, os.Getenv, log)
	if err != nil {
		return cli.Fail(stderr, "dev", 2, err)
	}
	if err := config.Start(ctx, "dev", c, cfg, ledger.WriteByUpdate, log); err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 1
	}
	p.only(f.run)
	var ln net.Listener
	if p.Receiver != nil {
		if ln, err = net.Listen("tcp", f.addr); err != nil {
			fmt.Fprintf(stderr, "dev: listen on %s: %v (is another dev server running? pick --addr)\n", f.addr, err)
			return 1
		}
		f.addr = ln.Addr().String()
	}
	log.Info("dev pipeline up", "parts", f.only, "addr", f.addr, "table", c.Table, "queue_url", c.QueueURL, "dlq_url", c.DLQURL,
		"routes", effects.RouteNames, "effect_settings", effects.SettingNames)
	if err := p.Run(ctx, ln, f.workers, f.timeout, f.every); err != nil && !errors.Is(err, context.Canceled) {
		return cli.Fail(stderr, "dev", 1, err)
	}
	return 0
}

// devFlags is what hookledger dev was asked to do.
type devFlags struct {
	addr, only     string
	run            map[string]bool // the parts in --only
	every, timeout time.Duration
	workers        int
	crash          string
	points         bool
}

// parse reads dev's flags; code >= 0 means exit with it.
func (d DevCommand) parse(args []string, stdout, stderr io.Writer) (f devFlags, code int) {
	fs := cli.NewFlags(d.Program, "dev", "dev [--addr "+DefaultAddr+"] [--only receiver,processor,reclaimer] [--reclaim-every 10s] [--function-timeout 30s] [--pollers 2] [--crash POINT[:N],...]", stderr)
	fs.StringVar(&f.addr, "addr", DefaultAddr, "address to serve the receiver on (POST /webhooks/{source}/{tenant})")
	fs.StringVar(&f.only, "only", strings.Join(parts, ","), "the parts to run, comma-separated: receiver, processor, reclaimer; e.g. --only receiver runs a front door alone, whose events wait on the queue (to stage an outage of the rest)")
	fs.DurationVar(&f.every, "reclaim-every", DefaultReclaimEvery, "how often to run the reclaimer")
	fs.DurationVar(&f.timeout, "function-timeout", DefaultFunctionTimeout, "deadline given to each processor batch, as Lambda's timeout would")
	fs.IntVar(&f.workers, "pollers", DefaultPollers, "concurrent SQS pollers (at least 1)")
	fs.StringVar(&f.crash, "crash", "", "crash the pipeline at these points, each once, and restart it, as Lambda would "+
		"(POINT[:N]: at the Nth pass; e.g. step.notify.ran or processor.after_claim:3); needs a crashpoints build: "+
		"go run -tags crashpoints ./cmd/hookledger dev --crash ...")
	fs.BoolVar(&f.points, "crash-points", false, "log every crash point the pipeline passes, with the --crash value that would stop it there (needs a crashpoints build)")
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return f, code
	}
	run, err := parseParts(f.only)
	if err == nil {
		err = flagsOK(f.every, f.timeout, f.workers)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return f, 2
	}
	f.run = run
	if (f.crash != "" || f.points) && !inject.Enabled {
		fmt.Fprintf(stderr, "dev: --crash and --crash-points need a binary built with crash points: run `go run -tags crashpoints ./cmd/hookledger dev %s`\n", strings.Join(args, " "))
		return f, 2
	}
	if f.crash != "" {
		if _, err := inject.ParseCrash(f.crash); err != nil {
			fmt.Fprintf(stderr, "dev: --crash: %v\n", err)
			return f, 2
		}
	}
	return f, -1
}

// deadLetterQueue sets an unset DLQ to the queue's redrive target; code >= 0 means exit.
func deadLetterQueue(ctx context.Context, c *config.Config, cfg aws.Config, stderr io.Writer) int {
	if c.DLQURL != "" {
		return -1
	}
	var err error
	if c.DLQURL, err = DeadLetterQueueURL(ctx, sqs.NewFromConfig(cfg), c.QueueURL); err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		if errors.Is(err, ErrNoDeadLetterQueue) {
			return 2
		}
		return 1
	}
	return -1
}

// supervise runs the pipeline as a child with the crash points armed (each
// fires once), and restarts it after each crash, as Lambda would.
func (d DevCommand) supervise(ctx context.Context, crash string, points bool, stderr io.Writer) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "dev: cannot find this binary to restart it: %v\n", err)
		return 1
	}
	marks, err := os.MkdirTemp("", "hookledger-dev-crash-")
	if err != nil {
		return cli.Fail(stderr, "dev", 1, err)
	}
	defer os.RemoveAll(marks)
	env := append(os.Environ(), childEnv+"=1", crashEnv+"="+crash, crashMarkEnv+"="+marks+"/mark")
	if points {
		env = append(env, crashLogEnv+"=1")
	}
	for restarts := 0; ; restarts++ {
		cmd := exec.CommandContext(ctx, self, os.Args[1:]...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stdout, os.Stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil:
			return 0
		case errors.As(err, &ee) && ee.ExitCode() == inject.CrashExitCode:
			fmt.Fprintf(stderr, "dev: the pipeline crashed at an armed point (restart %d); starting it again, as Lambda would; "+
				"the event's retry comes when its message is visible again (the queue's visibility timeout)\n", restarts+1)
			continue
		case err != nil:
			return cli.Fail(stderr, "dev", 1, err)
		default:
			return 0
		}
	}
}

// The parts of the pipeline dev runs (--only), in the order of an event's path.
const (
	partReceiver  = "receiver"
	partProcessor = "processor"
	partReclaimer = "reclaimer"
)

var parts = []string{partReceiver, partProcessor, partReclaimer}

// only drops the handlers of the parts not in run: Run leaves them out.
func (d *Pipeline) only(run map[string]bool) {
	if !run[partReceiver] {
		d.Receiver = nil
	}
	if !run[partProcessor] {
		d.Processor = nil
	}
	if !run[partReclaimer] {
		d.Reclaimer = nil
	}
}

// parseParts reads --only: a comma-separated list of parts, at least one.
func parseParts(s string) (map[string]bool, error) {
	run := map[string]bool{}
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(parts, p) {
			return nil, fmt.Errorf("--only %q: unknown part %q; want a comma-separated list of %s, e.g. --only receiver", s, p, strings.Join(parts, ", "))
		}
		run[p] = true
	}
	return run, nil
}

// flagsOK checks dev's numeric flags: each must be positive, or the ticker
// panics, every batch starts past its deadline, or nothing polls.
func flagsOK(every, timeout time.Duration, pollers int) error {
	switch {
	case every <= 0:
		return fmt.Errorf("--reclaim-every %v: want a positive interval, e.g. --reclaim-every 10s", every)
	case timeout <= 0:
		return fmt.Errorf("--function-timeout %v: want a positive deadline, e.g. --function-timeout 30s (Lambda's timeout is 1s to 15m)", timeout)
	case pollers < 1:
		return fmt.Errorf("--pollers %d: want at least 1 concurrent poller, e.g. --pollers 2", pollers)
	}
	return nil
}
