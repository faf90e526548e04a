package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestChaosFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "duplicates  30% of events redelivered"},
		{[]string{"--kinds", "crash,meteor"}, 2, `unknown fault kind "meteor"`},
		{[]string{"--faults", "dynamodb.slow=0.5"}, 2, "want service.kind=share"},
		{[]string{"--workers", "1"}, 2, "--workers at least 2"},
		{[]string{"--deliveries", "0"}, 2, "must be positive"},
	} {
		var out, errb bytes.Buffer
		code := runChaos(t.Context(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("chaos %v: exit %d, output %q %q; want %d and %q", tc.args, code, out.String(), errb.String(), tc.code, tc.want)
		}
	}
}
