// Command reclaimer is the reclaimer Lambda, as the hookledger version in go.mod ships it.
package main

import "github.com/hookledger/hookledger/lambda/reclaimer"

func main() { reclaimer.Main() }
