package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSendDefaultsSourceToProvider: --provider square posted to the
// /webhooks/stripe/... path; the source now defaults to the provider's name.
func TestSendDefaultsSourceToProvider(t *testing.T) {
	t.Parallel()
	paths := make(chan string, 4)
	srv := newPathRecorder(t, paths)
	for _, tc := range []struct {
		args []string
		path string
	}{
		{[]string{"--provider", "square"}, "/webhooks/square/acme"},
		{nil, "/webhooks/stripe/acme"},
		{[]string{"--provider", "square", "--source", "sq"}, "/webhooks/sq/acme"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"send", "--secret", "s", "--base", srv, "--id", "evt_1"}, tc.args...)
		if code := run(t.Context(), args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		if got := <-paths; got != tc.path {
			t.Errorf("%v posted to %s, want %s", tc.args, got, tc.path)
		}
	}
	checkUsage(t, []usageCase{
		{[]string{"send", "--secret", "s", "--source", ""}, "--source and --tenant must not be empty"},
		{[]string{"send", "--secret", "s", "--tenant", ""}, "--source and --tenant must not be empty"},
		{[]string{"send", "--secret", "s", "body.json"}, "unexpected argument"},
	})
	var out bytes.Buffer
	run(t.Context(), []string{"send", "--help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "default: the --provider's name") {
		t.Errorf("send --help does not say what --source defaults to:\n%s", out.String())
	}
}

// newPathRecorder serves a receiver stand-in that answers 200 and sends each
// request's path to paths; it returns its base URL.
func newPathRecorder(t *testing.T, paths chan<- string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		w.Header().Set("X-Hookledger-Result", "accepted")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
