//go:build !crashpoints

package inject

import "github.com/aws/smithy-go/middleware"

// Enabled reports whether this binary was built with the hooks live.
const Enabled = false

// Crash does nothing in a normal build.
func Crash(string) {}

// AWSOptions returns no middleware in a normal build.
func AWSOptions() []func(*middleware.Stack) error { return nil }
