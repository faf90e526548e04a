// Command processor is the processor Lambda, running the effects of effect/.
package main

import (
	"github.com/hookledger/hookledger/lambda/processor"

	"{{cookiecutter.module}}/effect"
)

func main() { processor.Main(effect.Register) }
