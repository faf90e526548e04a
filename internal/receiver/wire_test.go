package receiver_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/receiver"
)

func TestFromConfig(t *testing.T) {
	t.Parallel()
	c, err := config.Load(func(k string) string {
		return map[string]string{
			"HOOKLEDGER_QUEUE_URL": "http://localhost:4566/000000000000/q",
			"HOOKLEDGER_SOURCES":   `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["whsec_x"]}}}}`,
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	// config's defaults are the receiver's own.
	if c.MaxBody != receiver.DefaultMaxBody || c.Mismatch != receiver.MismatchFlag {
		t.Fatalf("config defaults %d %q drifted from the receiver's", c.MaxBody, c.Mismatch)
	}
	h, err := receiver.FromConfig(c, aws.Config{Region: "us-east-1"}, func(string) string { return "" }, nil)
	if err != nil || h.MaxBody != receiver.DefaultMaxBody || h.Sources == nil || h.Ledger == nil || h.Queue == nil {
		t.Fatalf("%+v %v", h, err)
	}
	c.SourcesJSON = `{"stripe":{"provider":"nope","tenants":{"acme":{"secrets":["x"]}}}}`
	if _, err := receiver.FromConfig(c, aws.Config{}, nil, nil); err == nil || !strings.Contains(err.Error(), "stripe") {
		t.Fatalf("bad provider: %v", err)
	}
}
