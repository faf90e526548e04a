package fallback

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

func TestFallback(t *testing.T) {
	t.Parallel()
	if Logger(nil) != slog.Default() {
		t.Error("Logger(nil) is not slog.Default()")
	}
	own := slog.New(slog.DiscardHandler)
	if Logger(own) != own {
		t.Error("Logger(own) is not own")
	}
	fixed := time.Unix(1700000000, 0)
	if got := Now(func() time.Time { return fixed }); !got.Equal(fixed) {
		t.Errorf("Now(fixed) = %v", got)
	}
	if got := Now(nil); time.Since(got) < 0 || time.Since(got) > time.Minute {
		t.Errorf("Now(nil) = %v, not the system clock", got)
	}
}

func TestPositive(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ v, want int }{{3, 3}, {0, 8}, {-1, 8}} {
		if got := Positive(c.v, 8); got != c.want {
			t.Errorf("Positive(%d, 8) = %d, want %d", c.v, got, c.want)
		}
	}
	if got := Positive(time.Duration(0), time.Second); got != time.Second {
		t.Errorf("Positive(0s, 1s) = %v", got)
	}
}

func TestSleep(t *testing.T) {
	t.Parallel()
	var slept time.Duration
	if err := Sleep(t.Context(), time.Hour, func(_ context.Context, d time.Duration) error { slept = d; return nil }); err != nil || slept != time.Hour {
		t.Errorf("Sleep through a pause: %v, slept %v", err, slept)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Sleep(ctx, time.Hour, nil); err != context.Canceled {
		t.Errorf("Sleep after cancel: %v", err)
	}
	if err := Sleep(t.Context(), time.Nanosecond, nil); err != nil {
		t.Errorf("Sleep 1ns: %v", err)
	}
}
