package config

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/hookledger/hookledger/internal/metric"
)

// Logger returns a JSON slog logger at the configured level. Its lines keep
// their time although CloudWatch Logs stamps each line too: Lambda gives a
// JSON line without a valid timestamp the level INFO, whatever its "level",
// and adds a timestamp of its own (Lambda developer guide, "Log-level
// filtering"), so leaving it out would save no bytes.
func (c Config) Logger(w io.Writer) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(strings.ToUpper(c.LogLevel)))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
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
