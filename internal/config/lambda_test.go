package config

import (
	"strings"
	"testing"
)

func TestLambdaAWS(t *testing.T) {
	t.Parallel()
	cfg, err := LambdaAWS(env(map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "tok",
		"AWS_ENDPOINT_URL": "http://localhost:4566",
	}))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil || cfg.Region != "eu-west-1" || creds.AccessKeyID != "AKIA" || creds.SessionToken != "tok" ||
		cfg.BaseEndpoint == nil || *cfg.BaseEndpoint != "http://localhost:4566" {
		t.Fatalf("%+v %+v %v", cfg, creds, err)
	}
	for _, missing := range []string{"AWS_REGION", "AWS_ACCESS_KEY_ID"} {
		e := map[string]string{"AWS_REGION": "r", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}
		delete(e, missing)
		if _, err := LambdaAWS(env(e)); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: %v", missing, err)
		}
	}
}
