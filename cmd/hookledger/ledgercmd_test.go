package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

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

// TestListWithoutAWSSaysWhatToSet: list without AWS_ENDPOINT_URL or
// credentials printed "list: list : ledger: unavailable: ... no EC2 IMDS
// role found" and no hint.
func TestListWithoutAWSSaysWhatToSet(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": t.TempDir() + "/none", "AWS_SHARED_CREDENTIALS_FILE": t.TempDir() + "/none",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": "us-east-1", "AWS_LAMBDA_FUNCTION_NAME": "",
		"HOOKLEDGER_TABLE": "hookledger", "HOOKLEDGER_PAYLOAD_BUCKET": "",
	} {
		t.Setenv(k, v)
	}
	var errb bytes.Buffer
	if code := run(t.Context(), []string{"list"}, io.Discard, &errb); code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errb.String())
	}
	s := errb.String()
	if !strings.HasPrefix(s, "list: scan table hookledger for all records: ") || strings.Contains(s, "list :") || strings.Count(s, "list") != 1 {
		t.Errorf("stderr %q: want one list: prefix", s)
	}
	if !strings.Contains(s, "export AWS_ENDPOINT_URL=http://localhost:4566") || !strings.Contains(s, "AWS credentials") {
		t.Errorf("stderr %q: no hint", s)
	}
}

func TestAWSHint(t *testing.T) {
	t.Parallel()
	env := func(ep string) func(string) string {
		return func(k string) string {
			if k == "AWS_ENDPOINT_URL" {
				return ep
			}
			return ""
		}
	}
	for _, tc := range []struct {
		err  error
		ep   string
		want string
	}{
		{errors.New("get credentials: failed to refresh cached credentials, no EC2 IMDS role found"), "", "export AWS_ENDPOINT_URL=http://localhost:4566"},
		{errors.New(`Post "http://127.0.0.1:9/": dial tcp 127.0.0.1:9: connect: connection refused`), "http://127.0.0.1:9", "nothing answers at AWS_ENDPOINT_URL=http://127.0.0.1:9"},
		{errors.New("operation error DynamoDB: Scan, UnrecognizedClientException"), "", "AWS credentials"},
		{errors.New("ResourceNotFoundException: table"), "http://127.0.0.1:9", ""},
		{nil, "", ""},
	} {
		got := awsHint(tc.err, env(tc.ep))
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("awsHint(%v, %q) = %q, want %q", tc.err, tc.ep, got, tc.want)
		}
	}
}
