//go:build crashpoints

package inject

import (
	"github.com/aws/smithy-go/middleware"
	"github.com/hookledger/hookledger/tools/crash"
	"github.com/hookledger/hookledger/tools/fault"
)

// Enabled reports whether this binary was built with the hooks live.
const Enabled = true

// Crash exits the process at the point HOOKLEDGER_CRASH names.
func Crash(point string) { crash.Hit(point) }

// AWSOptions returns the AWS fault middleware HOOKLEDGER_FAULTS asks for.
func AWSOptions() []func(*middleware.Stack) error { return fault.APIOptions() }
