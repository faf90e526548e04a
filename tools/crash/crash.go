// Package crash makes a process die at a named crash point, to prove that
// the pipeline recovers from a crash between any two steps. The product's
// hooks (internal/inject) call Hit only in binaries built with the build tag
// "crashpoints".
//
// Hit reads HOOKLEDGER_CRASH=name[:n] and, at the n-th hit of the named point
// (default the first), exits at once with status ExitCode, skipping deferred
// functions and buffered output, as a killed Lambda would. With
// HOOKLEDGER_CRASH_MARK=FILE only the first process to create FILE crashes,
// so a respawned Lambda with the same environment goes on.
package crash

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// ExitCode is the status a crash exits with.
const ExitCode = 86

var (
	once   sync.Once
	target string
	at     int
	mu     sync.Mutex
	hits   int
)

func load() {
	spec := os.Getenv("HOOKLEDGER_CRASH")
	name, n, _ := strings.Cut(spec, ":")
	target, at = name, 1
	if v, err := strconv.Atoi(n); err == nil && v > 0 {
		at = v
	}
}

// Hit exits the process at the configured hit of the named point.
func Hit(name string) {
	once.Do(load)
	if target == "" || name != target {
		return
	}
	mu.Lock()
	hits++
	fire := hits == at
	mu.Unlock()
	if !fire {
		return
	}
	// HOOKLEDGER_CRASH_MARK names a file that makes the crash happen once
	// across processes (a Lambda respawns with the same environment): the
	// process that creates it crashes, later ones do not.
	if mark := os.Getenv("HOOKLEDGER_CRASH_MARK"); mark != "" {
		f, err := os.OpenFile(mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		f.WriteString(name + "\n")
		f.Close()
	}
	os.Stderr.WriteString("crashpoint: crashing at " + name + "\n")
	os.Exit(ExitCode)
}
