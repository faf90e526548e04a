//go:build !crashpoints

package crashpoint

// Hit does nothing in a normal build.
func Hit(string) {}

// Enabled reports whether this binary was built with crash points.
const Enabled = false
