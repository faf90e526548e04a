// Command bus is the bus Lambda, as the hookledger version in go.mod ships it.
package main

import "github.com/hookledger/hookledger/lambda/bus"

func main() { bus.Main() }
