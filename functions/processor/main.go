// Command processor is the processor Lambda, running the effects of
// effect/.
package main

import (
	"github.com/hookledger/hookledger/effect"
	"github.com/hookledger/hookledger/lambda/processor"
)

func main() { processor.Main(effect.Register) }
