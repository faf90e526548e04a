//go:build !unix

package bench

import "time"

// CPUTime is 0 where getrusage is missing: the bench then models no CPU.
func CPUTime() time.Duration { return 0 }
