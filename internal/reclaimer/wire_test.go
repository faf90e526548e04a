package reclaimer_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/reclaimer"
)

// An unset setting reaches the handler as zero (its own default); a count
// set to 0 turns its feature off, which the handler reads as negative.
func TestFromConfigKeepsEachDefaultInTheHandler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		env                 map[string]string
		perShard, queue, ch int // want; -1: negative (off)
		continues           bool
	}{
		{"unset", nil, 0, 0, 0, true},
		{"set", map[string]string{"HOOKLEDGER_RECLAIM_BATCH": "50", "HOOKLEDGER_RECLAIM_MAX_QUEUE": "200", "HOOKLEDGER_RECLAIM_CHAIN": "3"}, 50, 200, 3, true},
		{"off", map[string]string{"HOOKLEDGER_RECLAIM_MAX_QUEUE": "0", "HOOKLEDGER_RECLAIM_CHAIN": "0"}, 0, -1, -1, false},
		{"off through HOOKLEDGER_SETTINGS", map[string]string{config.SettingsVar: `{"HOOKLEDGER_RECLAIM_MAX_QUEUE":"0","HOOKLEDGER_RECLAIM_CHAIN":0}`}, 0, -1, -1, false},
	} {
		env := map[string]string{"HOOKLEDGER_QUEUE_URL": "http://localhost:4566/000000000000/q", "AWS_LAMBDA_FUNCTION_NAME": "stack-reclaimer"}
		for k, v := range tc.env {
			env[k] = v
		}
		c, err := config.Load(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		h, err := reclaimer.FromConfig(c, aws.Config{Region: "us-east-1"}, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sign := func(n int) int {
			if n < 0 {
				return -1
			}
			return n
		}
		if h.PerShard != tc.perShard || sign(h.MaxQueue) != tc.queue || sign(h.MaxChain) != tc.ch || (h.Continue != nil) != tc.continues {
			t.Errorf("%s: PerShard %d MaxQueue %d MaxChain %d continues %v; want %d %d %d %v", tc.name,
				h.PerShard, h.MaxQueue, h.MaxChain, h.Continue != nil, tc.perShard, tc.queue, tc.ch, tc.continues)
		}
	}
}
