package idempotencytest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// testLogger writes the store's log lines to the test's log, so a failing
// test shows them and a passing one stays quiet.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(&tbHandler{t: t})
}

type tbHandler struct {
	t     testing.TB
	attrs []slog.Attr
}

func (h *tbHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *tbHandler) Handle(_ context.Context, r slog.Record) error {
	// A goroutine that logs after its test ended must not panic the run.
	defer func() { recover() }()
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range h.attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.t.Log(b.String())
	return nil
}

func (h *tbHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &tbHandler{t: h.t, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *tbHandler) WithGroup(string) slog.Handler { return h }
