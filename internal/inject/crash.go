// Crash points make a process die at a named point, to prove that the
// pipeline recovers from a crash between any two steps. Crash calls hit only
// in binaries built with the build tag "crashpoints".
//
// hit reads HOOKLEDGER_CRASH=name[:n][,name[:n]...] and, at the n-th hit of
// a named point (default the first), exits at once with status CrashExitCode, skipping deferred
// functions and buffered output, as a killed Lambda would. With
// HOOKLEDGER_CRASH_MARK=BASE only the first process to create BASE-POINT
// crashes at POINT, so a respawned Lambda with the same environment goes on.
package inject

import (
	"fmt"
	"strconv"
	"strings"
)

// CrashExitCode is the status a crash exits with.
const CrashExitCode = 86

// ParseCrash reads a crash spec: comma-separated NAME[:N] entries, each firing
// at the N-th hit of its point (default the first).
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

// CrashMarkFile is the mark a crash at point leaves when HOOKLEDGER_CRASH_MARK
// is base: one file per point.
func CrashMarkFile(base, point string) string { return base + "-" + point }
