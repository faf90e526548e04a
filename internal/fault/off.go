//go:build !crashpoints

package fault

import "github.com/aws/smithy-go/middleware"

// APIOptions returns no middleware in a normal build.
func APIOptions() []func(*middleware.Stack) error { return nil }
