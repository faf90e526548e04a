// Command reclaimer is the reclaimer Lambda (package reclaimer of lambda/).
package main

import "github.com/hookledger/hookledger/lambda/reclaimer"

func main() { reclaimer.Main() }
