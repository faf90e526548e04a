package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookledger/hookledger/internal/reconcile"
)

func TestReconcileUsage(t *testing.T) {
	t.Setenv("HOOKLEDGER_SOURCES", `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_x"]}}},"shop":{"provider":"shopify","tenants":{"acme":{"secrets":["literal:x"]}}}}`)
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9") // nothing is called
	t.Setenv("HOOKLEDGER_RECONCILE", "")
	t.Setenv("HOOKLEDGER_WEBHOOK_URL", "")
	t.Setenv("HOOKLEDGER_RECEIVER_FUNCTION", "")
	base := []string{"reconcile", "--source", "stripe", "--tenant", "acme", "--credential", "literal:sk_x"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reconcile"}, "--source and --tenant are required"},
		{[]string{"reconcile", "--source", "stripe", "--tenant", "acme"}, "no API credential"},
		{append(base, "--since", "200h"), "beyond the ledger's retention"},
		{base, "nowhere to feed"},
		{append(base, "--url", "not a url"), "--url"},
		{[]string{"reconcile", "--source", "shop", "--tenant", "acme", "--credential", "literal:x", "--dry-run"}, "can ask only stripe and github"},
		{append(base, "extra"), "unexpected argument"},
		{append(base, "--api-url", "https://stripe-proxy.example.com", "--dry-run"), "--trust-api-url"},
		{append(base, "--credential-file", "/nonexistent/key", "--dry-run"), "not both"},
		{[]string{"reconcile", "--source", "stripe", "--tenant", "acme", "--credential-file", "/nonexistent/key", "--dry-run"}, "--credential-file: open /nonexistent/key"},
	} {
		var errb bytes.Buffer
		if code := run(t.Context(), tc.args, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
	// An entry of HOOKLEDGER_RECONCILE supplies what the flags do not.
	t.Setenv("HOOKLEDGER_RECONCILE", `[{"source":"stripe","tenant":"acme","credential":"env:NOPE","window":"1h"}]`)
	spec, err := reconcileSpec(reconcile.Spec{Source: "stripe", Tenant: "acme", Window: "2h"}, map[string]bool{"since": true}, "")
	if err != nil || spec.Credential != "env:NOPE" || spec.Window != "2h" {
		t.Fatalf("merged spec %+v %v", spec, err)
	}
}

// TestReconcileAssumesTheLeastRetention: with the sources from the shell
// and no receiver function to ask, the deployed retention is unknown; the
// shell's default (168h) is not taken for it.
func TestReconcileAssumesTheLeastRetention(t *testing.T) {
	t.Setenv("HOOKLEDGER_SOURCES", `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:whsec_x"]}}}}`)
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9") // nothing is called
	t.Setenv("HOOKLEDGER_RECONCILE", "")
	t.Setenv("HOOKLEDGER_WEBHOOK_URL", "")
	t.Setenv("HOOKLEDGER_RECEIVER_FUNCTION", "")
	t.Setenv("HOOKLEDGER_RETENTION", "")
	var errb bytes.Buffer
	args := []string{"reconcile", "--source", "stripe", "--tenant", "acme", "--credential", "literal:sk_x", "--since", "160h", "--dry-run"}
	if code := run(t.Context(), args, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "beyond the ledger's retention") ||
		!strings.Contains(errb.String(), "HOOKLEDGER_RETENTION is not set") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	// The api_url must be https (or a local stub).
	errb.Reset()
	args = []string{"reconcile", "--source", "stripe", "--tenant", "acme", "--credential", "literal:sk_x", "--api-url", "http://api.stripe.com", "--dry-run"}
	if code := run(t.Context(), args, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "clear text") {
		t.Fatalf("plain http api_url: exit %d, stderr %q", code, errb.String())
	}
}

// TestReconcileCredentialOffTheCommandLine: the API credential can come
// from a file or stdin instead of a literal: in the arguments (shell
// history, ps), and is sent as read, surrounding whitespace aside.
func TestReconcileCredentialOffTheCommandLine(t *testing.T) {
	t.Setenv("HOOKLEDGER_SOURCES", `{"github":{"provider":"github","tenants":{"acme":{"secrets":["literal:gh_secret"]}}}}`)
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9") // nothing is listed, so the ledger is never asked
	t.Setenv("HOOKLEDGER_RECONCILE", "")
	t.Setenv("HOOKLEDGER_WEBHOOK_URL", "")
	t.Setenv("HOOKLEDGER_RECEIVER_FUNCTION", "")
	t.Setenv("HOOKLEDGER_RETENTION", "168h")
	const token = "ghp_from_a_file"
	// GitHub's hook deliveries API, with no deliveries, for one token.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token || r.URL.Path != "/repos/acme/shop/hooks/42/deliveries" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"message":"Bad credentials"}`))
			return
		}
		w.Write([]byte(`[]`))
	}))
	defer api.Close()
	keyFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(keyFile, []byte("  "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"reconcile", "--source", "github", "--tenant", "acme", "--hook", "repos/acme/shop/hooks/42", "--api-url", api.URL, "--dry-run"}
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  string
	}{
		{"file", append(base, "--credential-file", keyFile), "", 0, "0  listed by the provider"},
		{"stdin", append(base, "--credential", "-"), token + "\r\n", 0, "0  listed by the provider"},
		{"wrong token on stdin", append(base, "--credential", "-"), "ghp_other\n", 1, "401"},
		{"empty stdin", append(base, "--credential", "-"), "\n", 2, "the credential from stdin is empty"},
		{"two lines", append(base, "--credential", "-"), token + "\nmore\n", 2, "more than one line"},
		{"too long", append(base, "--credential", "-"), strings.Repeat("x", maxCredential+1), 2, "over 16 KB"},
	} {
		reconcileStdin = strings.NewReader(tc.stdin)
		var out, errb bytes.Buffer
		code := run(t.Context(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%s: exit %d, want %d and %q\n%s%s", tc.name, code, tc.code, tc.want, out.String(), errb.String())
		}
		if strings.Contains(errb.String(), token) {
			t.Errorf("%s: the credential is in the output: %s", tc.name, errb.String())
		}
	}
	reconcileStdin = os.Stdin
	// --help says why literal: is a poor place for the key.
	var out bytes.Buffer
	run(t.Context(), []string{"reconcile", "--help"}, &out, io.Discard)
	if !strings.Contains(out.String(), "shell history") || !strings.Contains(out.String(), "--credential-file") {
		t.Errorf("--help does not warn about literal: credentials:\n%s", out.String())
	}
}
