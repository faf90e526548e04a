// Command receiver is the receiver Lambda (package receiver of lambda/).
package main

import "github.com/hookledger/hookledger/lambda/receiver"

func main() { receiver.Main() }
