package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/lab/paystub"
)

func runPayments(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hooklab", "payments", "payments [--addr 127.0.0.1:8090] [--fail-every N]", stderr)
	addr := fs.String("addr", "127.0.0.1:8090", "address to serve the payments stub on")
	failEvery := fs.Int("fail-every", 0, "fail every N-th new charge with a 500 (0: never)")
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if err := cli.CheckInt(fs, "fail-every", 0, -1); err != nil {
		fmt.Fprintf(stderr, "payments: %v (0: never fail)\n", err)
		return 2
	}
	stub := paystub.New()
	stub.FailEvery = *failEvery
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "payments: listen on %s: %v\n", *addr, err)
		return 1
	}
	fmt.Fprintf(stdout, "payments stub on http://%s (POST /v1/charges with Idempotency-Key; GET /v1/stats)\nexport PAYMENTS_URL=http://%s\n", ln.Addr(), ln.Addr())
	srv := &http.Server{Handler: stub, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "payments: %v\n", err)
		return 1
	}
	return 0
}
