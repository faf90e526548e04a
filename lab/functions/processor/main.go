// Command processor is the proof lab's processor Lambda: the template's
// processor running the lab's own sample effect (lab/effect) instead of the
// user's. The lab's deploys (make e2e, make demo) put this binary in place of
// the template's processor, so they prove the pipeline whatever effect/ holds.
package main

import (
	"github.com/hookledger/hookledger/lab/effect"
	"github.com/hookledger/hookledger/lambda/processor"
)

func main() { processor.Main(effect.Register) }
