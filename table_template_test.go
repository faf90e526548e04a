package hookledger_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/cfn"
	"github.com/hookledger/hookledger/ledger"
	"gopkg.in/yaml.v3"
)

// TestTableIsTheLedgers: the template's table has the attribute
// definitions and indexes ledger.TableInput creates for tests and local
// runs, so what the emulator proves holds for the deployed table.
func TestTableIsTheLedgers(t *testing.T) {
	t.Parallel()
	props := cfn.Get(loadTemplate(t).resource("LedgerTable"), "Properties")
	in := ledger.TableInput("t")
	var want, got []string
	for _, a := range in.AttributeDefinitions {
		want = append(want, aws.ToString(a.AttributeName)+" "+string(a.AttributeType))
	}
	for _, a := range cfn.Get(props, "AttributeDefinitions").Content {
		got = append(got, cfn.Get(a, "AttributeName").Value+" "+cfn.Get(a, "AttributeType").Value)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("template attribute definitions %v, ledger.TableInput %v", got, want)
	}
	want, got = nil, nil
	for _, ix := range in.GlobalSecondaryIndexes {
		k := aws.ToString(ix.IndexName) + " " + string(ix.Projection.ProjectionType)
		for _, e := range ix.KeySchema {
			k += " " + aws.ToString(e.AttributeName) + ":" + string(e.KeyType)
		}
		want = append(want, k)
	}
	for _, ix := range cfn.Get(props, "GlobalSecondaryIndexes").Content {
		k := cfn.Get(ix, "IndexName").Value + " " + cfn.Get(ix, "Projection", "ProjectionType").Value
		for _, e := range cfn.Get(ix, "KeySchema").Content {
			k += " " + cfn.Get(e, "AttributeName").Value + ":" + cfn.Get(e, "KeyType").Value
		}
		got = append(got, k)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("template indexes %v, ledger.TableInput %v", got, want)
	}
}

// TestNoFunctionReadsTheDeadIndex: the dead index is for the operator
// (hookledger list and console, with the operator's credentials); no role
// in the template grants anything on it, nor on every index at once.
func TestNoFunctionReadsTheDeadIndex(t *testing.T) {
	t.Parallel()
	res := cfn.Get(loadTemplate(t).root, "Resources")
	due := 0
	var walk func(n *yaml.Node, where string)
	walk = func(n *yaml.Node, where string) {
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "/index/") {
			if !strings.HasSuffix(n.Value, "/index/"+ledger.DueIndex) {
				t.Errorf("%s grants %q: only the due index may be named (the reclaimer's); the dead index is the operator's", where, n.Value)
			}
			due++
		}
		for _, c := range n.Content {
			walk(c, where)
		}
	}
	for i := 0; i+1 < len(res.Content); i += 2 {
		walk(res.Content[i+1], res.Content[i].Value)
	}
	if due == 0 {
		t.Error("no role grants the due index: the walk checked nothing")
	}
}
