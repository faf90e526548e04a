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
	if fire {
		os.Stderr.WriteString("crashpoint: crashing at " + name + "\n")
		os.Exit(ExitCode)
	}
}
