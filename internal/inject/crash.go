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
	"os"
	"strconv"
	"strings"
	"sync"
)

// CrashExitCode is the status a crash exits with.
const CrashExitCode = 86

var (
	once    sync.Once
	targets map[string]int // point -> the hit that fires
	mu      sync.Mutex
	hits    = map[string]int{}
	// logPasses (HOOKLEDGER_CRASH_LOG=1) prints each point the first time
	// the process passes it, with the value that would stop it there.
	logPasses bool
)

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

func load() {
	t, err := ParseCrash(os.Getenv("HOOKLEDGER_CRASH"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashpoints: HOOKLEDGER_CRASH: %v\n", err)
		os.Exit(2)
	}
	targets = t
	logPasses = os.Getenv("HOOKLEDGER_CRASH_LOG") == "1"
}

// CrashMarkFile is the mark a crash at point leaves when HOOKLEDGER_CRASH_MARK
// is base: one file per point.
func CrashMarkFile(base, point string) string { return base + "-" + point }

// hit exits the process at the configured hit of the named point.
func hit(name string) {
	once.Do(load)
	at, armed := targets[name]
	mu.Lock()
	hits[name]++
	first, fire := hits[name] == 1, armed && hits[name] == at
	mu.Unlock()
	if first && logPasses {
		os.Stderr.WriteString("crashpoint: passed " + name + " (--crash " + name + " stops the pipeline at its first pass, --crash " + name + ":N at its Nth)\n")
	}
	if !fire {
		return
	}
	// HOOKLEDGER_CRASH_MARK names a base for files that make each crash
	// happen once across processes (a Lambda respawns with the same
	// environment): the process that creates a point's file crashes, later
	// ones do not.
	if mark := os.Getenv("HOOKLEDGER_CRASH_MARK"); mark != "" {
		f, err := os.OpenFile(CrashMarkFile(mark, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		f.WriteString(name + "\n")
		f.Close()
	}
	os.Stderr.WriteString("crashpoint: crashing at " + name + "\n")
	os.Exit(CrashExitCode)
}
