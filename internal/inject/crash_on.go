//go:build crashpoints

package inject

import (
	"fmt"
	"os"
	"sync"
)

var (
	once    sync.Once
	targets map[string]int // point -> the hit that fires
	mu      sync.Mutex
	hits    = map[string]int{}
	// logPasses (HOOKLEDGER_CRASH_LOG=1) prints each point the first time
	// the process passes it, with the value that would stop it there.
	logPasses bool
)

func load() {
	t, err := ParseCrash(os.Getenv("HOOKLEDGER_CRASH"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashpoints: HOOKLEDGER_CRASH: %v\n", err)
		os.Exit(2)
	}
	targets = t
	logPasses = os.Getenv("HOOKLEDGER_CRASH_LOG") == "1"
}

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
	// Only the process that creates the point's mark file crashes.
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
