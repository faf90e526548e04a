package main

import "testing"

// TestLedgerCommandsRefuseBadInput: list --limit -5 used to scan the whole
// table, and inspect with an empty source, tenant or key exited 1 with a
// ledger error.
func TestLedgerCommandsRefuseBadInput(t *testing.T) {
	t.Setenv("HOOKLEDGER_TABLE", "") // refused before the configuration is read
	checkUsage(t, []usageCase{
		{[]string{"list", "--limit", "-5"}, "--limit -5: want a positive number of records, or 0 for all"},
		{[]string{"list", "dead"}, "unexpected argument"},
		{[]string{"inspect", "--source", "", "evt_1"}, "--source is empty"},
		{[]string{"inspect", "--tenant", "", "evt_1"}, "--tenant is empty"},
		{[]string{"inspect", ""}, "KEY is empty"},
	})
}
