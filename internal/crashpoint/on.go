//go:build crashpoints

package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// Enabled reports whether this binary was built with crash points.
const Enabled = true

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
