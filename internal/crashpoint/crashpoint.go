// Package crashpoint names the step boundaries where fault-injection runs
// kill the process, to prove that the ledger recovers from a crash between
// any two steps.
//
// In a normal build Hit is an empty function the compiler removes: no crash
// point can fire in a deployment. Only a binary built with the build tag
// "crashpoints" (the demo and the fault harness build one) reads
// HOOKLEDGER_CRASH=name[:n] and, at the n-th hit of the named point (default
// the first), exits at once with status 86, skipping deferred functions and
// buffered output, as a killed Lambda would. With HOOKLEDGER_CRASH_MARK=FILE
// only the first process to create FILE crashes, so a respawned Lambda with
// the same environment goes on.
package crashpoint

// The named crash points.
const (
	ReceiverAfterVerify  = "receiver.after_verify"
	ReceiverAfterRecord  = "receiver.after_record"
	ReceiverAfterPayload = "receiver.after_payload"
	ReceiverAfterEnqueue = "receiver.after_enqueue"
	ProcessorAfterClaim  = "processor.after_claim"
	ProcessorAfterEffect = "processor.after_effect"
	ProcessorAfterDone   = "processor.after_complete"
	ReclaimerAfterReset  = "reclaimer.after_reset"
)

// ExitCode is the status a crash point exits with.
const ExitCode = 86
