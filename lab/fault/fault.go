// Package fault injects AWS faults (throttling, 5xx, timeouts, timeouts
// after the write succeeded) into the SDK clients of a fault-injection
// build, to prove the ledger survives them.
//
// The product reaches it only through internal/inject, in binaries built
// with the build tag "crashpoints"; a normal build links none of it.
package fault
