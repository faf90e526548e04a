package config

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/hookledger/hookledger/internal/metric"
)

// Logger returns a JSON slog logger at the configured level, each line's
// time under "timestamp" (RFC 3339, UTC, ms): without it Lambda files the
// line as INFO and bills a timestamp of its own (Lambda developer guide,
// "Log-level filtering").
func (c Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(strings.ToUpper(c.LogLevel)))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: timestampKey}))
}

// timestampLayout is RFC 3339 in UTC with milliseconds.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// timestampKey renames the line's own time attribute to "timestamp" (a
// top-level attribute named "time" would be renamed too; no line has one).
func timestampKey(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
		a.Key = "timestamp"
		a.Value = slog.StringValue(a.Value.Time().UTC().Format(timestampLayout))
	}
	return a
}

// Metrics returns the EMF emitter on stdout (Lambda ships it), or nil when metrics are off.
func (c Config) Metrics() *metric.Emitter {
	if !c.EmitMetrics {
		return nil
	}
	return metric.New(os.Stdout, c.Stage)
}

// Fatal prints a configuration error the way every entry point does, and exits 2.
func Fatal(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(2)
}
