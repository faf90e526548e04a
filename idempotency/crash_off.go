//go:build !crashpoints

package idempotency

// crash does nothing in a normal build: no crash point can fire in a
// deployment (see crash_on.go).
func crash(string) {}
