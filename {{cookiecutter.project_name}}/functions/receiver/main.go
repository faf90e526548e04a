// Command receiver is the receiver Lambda, as the hookledger version in go.mod ships it.
package main

import "github.com/hookledger/hookledger/lambda/receiver"

func main() { receiver.Main() }
