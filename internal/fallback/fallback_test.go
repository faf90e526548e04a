package fallback

import (
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
