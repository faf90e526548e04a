package ledger

import (
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// exprParts are the clauses of one UpdateItem, built up by the ledger's
// writes: assignments for SET, attribute paths for REMOVE, and the names
// and values they use.
type exprParts struct {
	set    []string
	remove []string
	names  map[string]string
	vals   map[string]types.AttributeValue
	// ends and why: a lease holder's write that answers its run (endRun).
	ends RunOutcome
	why  string
}

// ending marks p as the write that ends the lease's run with outcome.
func (p *exprParts) ending(outcome RunOutcome, why string) *exprParts {
	p.ends, p.why = outcome, why
	return p
}

func (p *exprParts) String() string {
	e := "SET " + strings.Join(p.set, ", ")
	if len(p.remove) > 0 {
		e += " REMOVE " + strings.Join(p.remove, ", ")
	}
	return e
}

// parts starts an update: the SET assignments, the REMOVE paths, the
// placeholders #st, #format and #release (reserved words) and the values
// vals.
func parts(set, remove []string, vals map[string]types.AttributeValue) *exprParts {
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	return &exprParts{set: set, remove: remove, names: map[string]string{"#st": attrStatus, "#format": attrFormat, "#release": attrRelease}, vals: vals}
}

// uses reports whether expr mentions the placeholder p as a whole token.
func uses(expr, p string) bool {
	for i := 0; ; {
		j := strings.Index(expr[i:], p)
		if j < 0 {
			return false
		}
		end := i + j + len(p)
		if end == len(expr) || !isWord(expr[end]) {
			return true
		}
		i = end
	}
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// written reads a conditional write's answer: true when it wrote, false
// when its condition refused it, or the write's error.
func written(err error) (bool, error) {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ccf):
		return false, nil
	}
	return false, err
}
