//go:build crashpoints

package inject

// Enabled reports whether this binary was built with the hooks live.
const Enabled = true

// Crash exits the process at the point HOOKLEDGER_CRASH names.
func Crash(point string) { hit(point) }
