// Package crash makes a process die at a named crash point, to prove that
// the pipeline recovers from a crash between any two steps. The product's
// hooks (internal/inject) call Hit only in binaries built with the build tag
// "crashpoints".
//
// Hit reads HOOKLEDGER_CRASH=name[:n][,name[:n]...] and, at the n-th hit of
// a named point (default the first), exits at once with status ExitCode, skipping deferred
// functions and buffered output, as a killed Lambda would. With
// HOOKLEDGER_CRASH_MARK=BASE only the first process to create BASE-POINT
// crashes at POINT, so a respawned Lambda with the same environment goes on.
package crash

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ExitCode is the status a crash exits with.
const ExitCode = 86

var (
	once    sync.Once
	targets map[string]int // point -> the hit that fires
	mu      sync.Mutex
	hits    = map[string]int{}
)

// Parse reads a crash spec: comma-separated NAME[:N] entries, each firing
// at the N-th hit of its point (default the first).
func Parse(spec string) (map[string]int, error) {
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
	t, err := Parse(os.Getenv("HOOKLEDGER_CRASH"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "crash: HOOKLEDGER_CRASH: %v\n", err)
		os.Exit(2)
	}
	targets = t
}

// MarkFile is the mark a crash at point leaves when HOOKLEDGER_CRASH_MARK
// is base: one file per point.
func MarkFile(base, point string) string { return base + "-" + point }

// Hit exits the process at the configured hit of the named point.
func Hit(name string) {
	once.Do(load)
	at, ok := targets[name]
	if !ok {
		return
	}
	mu.Lock()
	hits[name]++
	fire := hits[name] == at
	mu.Unlock()
	if !fire {
		return
	}
	// HOOKLEDGER_CRASH_MARK names a base for files that make each crash
	// happen once across processes (a Lambda respawns with the same
	// environment): the process that creates a point's file crashes, later
	// ones do not.
	if mark := os.Getenv("HOOKLEDGER_CRASH_MARK"); mark != "" {
		f, err := os.OpenFile(MarkFile(mark, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		f.WriteString(name + "\n")
		f.Close()
	}
	os.Stderr.WriteString("crashpoint: crashing at " + name + "\n")
	os.Exit(ExitCode)
}
