// Package inject holds the pipeline's crash points: named points at every
// step boundary of the three functions, where a proof build can make the
// process die.
//
// In a normal build Crash is an empty function the compiler removes. A
// binary built with the tag "crashpoints" (the lab's) exits at the points
// HOOKLEDGER_CRASH names (ParseCrash) with CrashExitCode, skipping deferred
// functions, as a killed Lambda would. With HOOKLEDGER_CRASH_MARK=BASE only
// the first process to create BASE-POINT crashes there: a respawn goes on.
package inject

// The named crash points; steps add their own (StepStarted, StepRan).
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

// StepStarted names the crash point between an at-most-once step's
// "started" mark and its function: step.NAME.started.
func StepStarted(step string) string { return "step." + step + ".started" }

// StepRan names the crash point right after a step's function returned,
// before anything about it is recorded: step.NAME.ran.
func StepRan(step string) string { return "step." + step + ".ran" }
