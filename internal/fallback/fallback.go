// Package fallback holds what a handler uses for a field left unset: the
// default logger, the system clock, a timer, a setting's default.
package fallback

import (
	"context"
	"log/slog"
	"time"
)

// Logger is log, or slog.Default() when log is nil.
func Logger(log *slog.Logger) *slog.Logger {
	if log != nil {
		return log
	}
	return slog.Default()
}

// Now is now(), or time.Now() when now is nil.
func Now(now func() time.Time) time.Time {
	if now != nil {
		return now()
	}
	return time.Now()
}

// Sleep waits d, or until ctx ends, through sleep when it is not nil (a test's).
func Sleep(ctx context.Context, d time.Duration, sleep func(context.Context, time.Duration) error) error {
	if sleep != nil {
		return sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Positive is v, or def when v is zero or negative: a setting's default.
func Positive[T ~int | ~int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
