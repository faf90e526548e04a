// Package fault injects AWS faults (throttling, 5xx, timeouts, timeouts
// after the write succeeded) into the SDK clients of a fault-injection
// build, to prove the ledger survives them.
//
// In a normal build APIOptions returns nil and nothing is injected. Only a
// binary built with the build tag "crashpoints" reads HOOKLEDGER_FAULTS.
package fault
