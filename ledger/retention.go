package ledger

import (
	"fmt"
	"time"
)

// MinRetention is the shortest retention the pipeline accepts, globally and
// per source: a record must outlive its own processing (the processor's
// retries, the reclaimer's re-drives and an outage of either), or an
// accepted event would expire before it is done and be lost.
const MinRetention = 24 * time.Hour

// retention is how long items of source live: Options.SourceRetention's
// entry for it, else Options.Retention. Every write that sets expires_at
// (the record, its payload, the replay guard's digest) goes through it, so a
// payload never expires before its record.
func (l *Ledger) retention(source string) time.Duration {
	if d, ok := l.opt.SourceRetention[source]; ok {
		return d
	}
	return l.opt.Retention
}

// checkRetentions refuses per-source retentions that are not positive.
func checkRetentions(m map[string]time.Duration) error {
	for src, d := range m {
		if d <= 0 {
			return fmt.Errorf("%w: retention %v of source %q must be positive", ErrInvalid, d, src)
		}
	}
	return nil
}
