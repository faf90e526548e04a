package config

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/hookledger/hookledger/internal/metric"
)

// Logger returns a JSON slog logger at the configured level, whose lines
// carry their time only when c.LogTime is set.
func (c Config) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{}
	var level slog.Level
	level.UnmarshalText([]byte(strings.ToUpper(c.LogLevel)))
	opts.Level = level
	if !c.LogTime {
		opts.ReplaceAttr = dropTime
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// dropTime leaves the line's own time out. slog cannot tell it from an
// attribute of that name at the top level, which no line of ours has; one
// named "time" in a group stays.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// Metrics returns the EMF emitter (stdout, as Lambda ships it to CloudWatch
// Logs), or nil when metrics are off.
func (c Config) Metrics() *metric.Emitter {
	if !c.EmitMetrics {
		return nil
	}
	return metric.New(os.Stdout, c.Stage)
}

// Fatal prints a configuration error the way every entry point does and
// exits 2.
func Fatal(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(2)
}
