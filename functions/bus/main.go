// Command bus is the bus Lambda (package bus of lambda/).
package main

import "github.com/hookledger/hookledger/lambda/bus"

func main() { bus.Main() }
