package inject

import (
	"fmt"
	"strconv"
	"strings"
)

// CrashExitCode is the status a crash exits with.
const CrashExitCode = 86

// ParseCrash reads comma-separated NAME[:N] entries, each firing at its point's N-th hit (default 1).
func ParseCrash(spec string) (map[string]int, error) {
	out := map[string]int{}
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, n, hasN := strings.Cut(e, ":")
		at := 1
		if hasN {
			v, err := strconv.Atoi(n)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("crash point %q: the count after ':' must be a positive integer", e)
			}
			at = v
		}
		out[name] = at
	}
	return out, nil
}

// CrashMarkFile is the mark a crash at point leaves under HOOKLEDGER_CRASH_MARK=base.
func CrashMarkFile(base, point string) string { return base + "-" + point }
