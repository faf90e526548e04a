//go:build !crashpoints

package inject

// Enabled reports whether this binary was built with the hooks live.
const Enabled = false

// Crash does nothing in a normal build.
func Crash(string) {}
