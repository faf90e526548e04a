package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/version"
)

// TestStart: a function's cold start logs one line naming it and the
// version, and stops, naming the release to deploy, on a table that holds
// a newer record format.
func TestStart(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	c := config.Config{Table: awstest.Table(t, cfg)}
	var out bytes.Buffer
	if err := config.Start(t.Context(), "receiver", c, cfg, ledger.WriteByPut, c.Logger(&out)); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("cold start wrote %q, want one JSON line (%v)", out.String(), err)
	}
	if line["msg"] != "cold start" || line["function"] != "receiver" || line["version"] != version.Version || line["format"] != float64(ledger.Format) {
		t.Errorf("cold start line %v", line)
	}

	// A later release raised the table past this code's format.
	if _, err := dynamodb.NewFromConfig(cfg).PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &c.Table, Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "ledger#meta"}, "sk": &types.AttributeValueMemberS{Value: "format"},
		"format": &types.AttributeValueMemberN{Value: "99"}, "release": &types.AttributeValueMemberS{Value: "7.0.0"},
	}}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := config.Start(t.Context(), "processor", c, cfg, ledger.WriteByUpdate, c.Logger(&out))
	if !errors.Is(err, ledger.ErrNewerFormat) || !strings.Contains(err.Error(), "Deploy hookledger v7.0.0 or later") || out.Len() != 0 {
		t.Fatalf("over format 99: %v, logged %q", err, out.String())
	}
}
