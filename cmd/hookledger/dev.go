package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger"

	"github.com/hookledger/hookledger/internal/cli"

	"github.com/hookledger/hookledger/effect"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/local"
	"github.com/hookledger/hookledger/internal/sdkconfig"
)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "dev", "dev [--addr 127.0.0.1:8080] [--reclaim-every 10s] [--function-timeout 30s] [--pollers 2]", stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to serve the receiver on (POST /webhooks/{source}/{tenant})")
	every := fs.Duration("reclaim-every", 10*time.Second, "how often to run the reclaimer")
	timeout := fs.Duration("function-timeout", 30*time.Second, "deadline given to each processor batch, as Lambda's timeout would")
	workers := fs.Int("pollers", 2, "concurrent SQS pollers (at least 1)")
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if err := devFlags(*every, *timeout, *workers); err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 2
	}
	fs.Usage = func() {}
	c, err := config.Load(os.Getenv)
	if err == nil {
		err = c.ValidateReceiver()
	}
	if err != nil {
		fmt.Fprintf(stderr, "dev: %v\nRun `hookledger setup` to create the table and queues; it prints the variables to export.\n", err)
		return 2
	}
	log := c.Logger(stdout)
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 1
	}
	if c.DLQURL == "" {
		// The deployed reclaimer is handed the stack's DLQ; here it is the
		// queue's redrive target, or the pipeline would never take back
		// the bodies only the DLQ holds.
		if c.DLQURL, err = local.DeadLetterQueueURL(ctx, sqs.NewFromConfig(cfg), c.QueueURL); err != nil {
			fmt.Fprintf(stderr, "dev: %v\n", err)
			if errors.Is(err, local.ErrNoDeadLetterQueue) {
				return 2
			}
			return 1
		}
	}
	routes := hookledger.NewRouter()
	if err := effect.Register(routes, os.Getenv); err != nil {
		fmt.Fprintf(stderr, "dev: effect configuration: %v\n", err)
		return 2
	}
	d, err := local.New(c, cfg, routes, os.Getenv, log)
	if err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "dev: listen on %s: %v (is another dev server running? pick --addr)\n", *addr, err)
		return 1
	}
	log.Info("dev pipeline up", "addr", ln.Addr().String(), "table", c.Table, "queue_url", c.QueueURL, "dlq_url", c.DLQURL)
	if err := d.Run(ctx, ln, *workers, *timeout, *every); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 1
	}
	return 0
}

// devFlags checks dev's numeric flags: each must be positive, or the ticker
// panics, every batch starts past its deadline, or nothing polls.
func devFlags(every, timeout time.Duration, pollers int) error {
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
