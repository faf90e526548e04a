package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/console"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
)

// defaultConsoleAddr is where the console listens unless --addr says.
const defaultConsoleAddr = "127.0.0.1:8095"

var consoleHelp = `Serves a web page over the ledger at http://` + defaultConsoleAddr + ` (--addr), on
this machine only: nothing is deployed to AWS. Ctrl-C stops it.

It shows events by source, tenant, status, type and time, a page at a time
through the ledger's indexes; one event's timeline (received, the wait in
the queue, each run and step with its downstream key); the dead events and
the dead-letter queue. Replaying an event, resolving an indeterminate step
and redriving the dead-letter queue run hookledger replay, each behind a
confirmation page.

It needs:
  AWS credentials: your own (AWS_PROFILE, the environment), allowed to read
    the table and, for the actions, to update it and send to the queue; or
    AWS_ENDPOINT_URL for the emulator
  HOOKLEDGER_TABLE           the ledger table (stack output LedgerTableName;
                             default ` + config.DefaultTable + `, as hookledger setup makes it)
  HOOKLEDGER_QUEUE_URL       for the actions (stack output QueueUrl); without
                             it the page only reads
  HOOKLEDGER_DLQ_URL         for the dead-letter queue (DeadLetterQueueUrl)
  HOOKLEDGER_PAYLOAD_BUCKET  for bodies kept in S3 (PayloadBucketName)

  hookledger console
  AWS_PROFILE=prod HOOKLEDGER_TABLE=hookledger-prod-LedgerTable-ABC hookledger console --addr 127.0.0.1:9000
`

func runConsole(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "console", "console [--addr 127.0.0.1:8095] [--allow-remote]", stderr)
	addr := fs.String("addr", defaultConsoleAddr, "address to listen on: a loopback address unless --allow-remote")
	remote := fs.Bool("allow-remote", false, "listen on another address too: whoever reaches it reads the ledger and replays events with your credentials (put your own authentication in front)")
	synopsis := fs.Usage
	fs.Usage = func() {
		synopsis()
		fmt.Fprint(fs.Output(), "\n"+consoleHelp)
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "console: unexpected argument %q; console takes only flags (hookledger console --help)\n", fs.Arg(0))
		return 2
	}
	if err := consoleAddr(*addr, *remote, stderr); err != nil {
		return cli.Fail(stderr, "console", 2, err)
	}
	cfg, err := consoleConfig(ctx)
	if err != nil {
		return cli.Fail(stderr, "console", 2, err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return cli.Fail(stderr, "console", 1, fmt.Errorf("listen on %s: %w (another console running? choose another --addr)", *addr, err))
	}
	cfg.Hosts = console.Hosts(ln.Addr())
	srv, err := console.New(cfg)
	if err != nil {
		ln.Close()
		return cli.Fail(stderr, "console", 1, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute}
	fmt.Fprintf(stdout, "hookledger console: http://%s (table %s); Ctrl-C stops it\n", ln.Addr(), cfg.Ledger.Table())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err = hs.Shutdown(shut)
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return cli.Fail(stderr, "console", 1, err)
	}
	return 0
}

// consoleAddr refuses an address off this machine unless allowed, and
// warns when it is.
func consoleAddr(addr string, remote bool, stderr io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want host:port, e.g. %s", addr, defaultConsoleAddr)
	}
	ip := net.ParseIP(host)
	if host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	if !remote {
		return fmt.Errorf("--addr %s is not a loopback address: the console reads the ledger and replays events with your AWS credentials, for whoever reaches it. Use 127.0.0.1, or add --allow-remote behind your own authentication", addr)
	}
	fmt.Fprintf(stderr, "console: warning: listening on %s (--allow-remote): anyone who reaches it can read the ledger, bodies included, and replay events with your credentials\n", addr)
	return nil
}

// consoleConfig opens the ledger and, when the queues are known, the actions.
func consoleConfig(ctx context.Context) (console.Config, error) {
	c, err := config.Load(os.Getenv)
	if err != nil {
		return console.Config{}, err
	}
	awsCfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		return console.Config{}, err
	}
	l, err := ledger.New(dynamodb.NewFromConfig(awsCfg), c.LedgerOptions())
	if err != nil {
		return console.Config{}, err
	}
	store := payloadStore(c, awsCfg)
	cfg := console.Config{
		Ledger: l,
		Body:   func(ctx context.Context, rec ledger.Record) ([]byte, error) { return blob.Body(ctx, l, store, rec) },
		Log:    slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	switch {
	case c.QueueURL == "":
		cfg.NoActions = "Actions are off: set HOOKLEDGER_QUEUE_URL to the processing queue's URL (the stack output QueueUrl; hookledger setup prints it) and start the console again."
	case c.DLQURL == "":
		cfg.NoRedrive = "Reading and redriving the dead-letter queue is off: set HOOKLEDGER_DLQ_URL to its URL (the stack output DeadLetterQueueUrl) and start the console again."
	}
	if c.QueueURL != "" {
		cfg.Actions = &consoleActions{ledger: l, sqs: sqs.NewFromConfig(awsCfg), queueURL: c.QueueURL, dlqURL: c.DLQURL, store: store}
	}
	return cfg, nil
}

// consoleActions are the console's actions: hookledger replay, as the CLI
// runs it, its output collected for the page.
type consoleActions struct {
	ledger           *ledger.Ledger
	sqs              redriveAPI
	queueURL, dlqURL string
	store            *blob.Store
}

var _ console.Actions = (*consoleActions)(nil)

func (a *consoleActions) Replay(ctx context.Context, rp console.Replay, dry bool) (string, error) {
	o := replayOptions{source: rp.ID.Source, tenant: rp.ID.Tenant, id: rp.ID.ID, dry: dry, step: rp.Step}
	if rp.Step != "" {
		o.markDone, o.rerun, o.result = rp.MarkDone, !rp.MarkDone, rp.Result
	}
	return a.do(ctx, o)
}

func (a *consoleActions) Redrive(ctx context.Context, dry bool) (string, error) {
	return a.do(ctx, replayOptions{dlq: a.dlqURL, dry: dry})
}

func (a *consoleActions) do(ctx context.Context, o replayOptions) (string, error) {
	if err := o.validate(); err != nil {
		return "", err
	}
	var out bytes.Buffer // what the CLI prints to stdout and stderr, in order
	r := &replayer{ledger: a.ledger, sqs: a.sqs, queueURL: a.queueURL, store: a.store, now: time.Now, stdout: &out, stderr: &out}
	if code := r.run(ctx, o); code != 0 {
		return out.String(), fmt.Errorf("not all of it could be done (hookledger replay would exit %d); the output says why", code)
	}
	return out.String(), nil
}
