// Command reconciler is the reconciler Lambda, as the hookledger version in go.mod ships it.
package main

import "github.com/hookledger/hookledger/lambda/reconciler"

func main() { reconciler.Main() }
