// Package inject holds the pipeline's fault-injection hooks: named crash
// points at every step boundary of the three functions, and a place to add
// SDK middleware that injects AWS faults.
//
// In a normal build every hook is an empty function the compiler removes: no
// crash point can fire and no fault can be injected in a deployment. A binary
// built with the build tag "crashpoints" (the demo, the fault harness and the
// crash tests build one) forwards the hooks to the proof tooling in tools/crash
// and tools/fault, which read HOOKLEDGER_CRASH and HOOKLEDGER_FAULTS.
package inject

// The named crash points. Steps add their own, named after the step (see
// StepStarted and StepRan).
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
