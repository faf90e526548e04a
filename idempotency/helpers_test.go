package idempotency_test

import (
	"io"
	"log/slog"
	"os"
)

// quietLogger keeps warnings visible in verbose runs only.
func quietLogger() *slog.Logger {
	if os.Getenv("IDEMPOTENCY_TEST_LOG") != "" {
		return slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

func jsonLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
