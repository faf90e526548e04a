// Command reconciler is the reconciler Lambda (package reconciler of lambda/).
package main

import "github.com/hookledger/hookledger/lambda/reconciler"

func main() { reconciler.Main() }
