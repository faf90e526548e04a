package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/hookledger/hookledger/internal/engine"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/local"
	"github.com/hookledger/hookledger/internal/providerstub"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reconcile"
)

// TestReconcileCommandHealsAnOutage runs `hookledger reconcile` as an
// operator would, after a Stripe outage, against the pipeline of hookledger
// dev (with this package's test routes, whose recorded effects are the
// oracle) and the provider stub: every invoice charged exactly once.
func TestReconcileCommandHealsAnOutage(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.Table(t, cfg)
	qurl, _ := awstest.Queues(t, cfg, queue.QueueSpec{VisibilityTimeout: 20})
	fx := newEffects()
	const secret = "whsec_reconcile_cmd"
	sources := `{"stripe":{"provider":"stripe","tenants":{"acme":{"secrets":["literal:` + secret + `"]}}}}`
	env := map[string]string{"HOOKLEDGER_TABLE": table, "HOOKLEDGER_QUEUE_URL": qurl, "HOOKLEDGER_SOURCES": sources, "LOG_LEVEL": "warn"}
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("AWS_ENDPOINT_URL", awstest.Endpoint(t))
	c, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	d, err := local.New(c, cfg, engine.MustRoutes(fx.routes()), func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, ln, 2, 10*time.Second, time.Second) }()
	defer func() { cancel(); <-done }()

	stub := providerstub.New(providerstub.Options{})
	api := httptest.NewServer(stub)
	defer api.Close()
	webhookURL := "http://" + ln.Addr().String() + "/webhooks/{source}/{tenant}"
	stub.Stripe.SetEndpoint("http://"+ln.Addr().String()+"/webhooks/stripe/acme", secret)
	const invoices = 10
	lost := 0
	for i := range invoices {
		stub.Stripe.SetDown(i%3 == 1)
		obj := fmt.Sprintf(`{"id":"in_cmd_%d","object":"invoice","amount_paid":%d,"currency":"usd","customer":"cus_%d"}`, i, 1000+i, i)
		if _, ok, err := stub.Stripe.Emit(t.Context(), "invoice.paid", json.RawMessage(obj)); err != nil {
			t.Fatal(err)
		} else if !ok {
			lost++
		}
	}
	if lost != 3 {
		t.Fatalf("%d lost, want 3", lost)
	}
	args := []string{"reconcile", "--source", "stripe", "--tenant", "acme", "--credential", "literal:sk_test_stub", "--api-url", api.URL, "--min-age", "0s", "--url", webhookURL}

	var out, errb bytes.Buffer
	if code := run(t.Context(), append(args, "--dry-run"), &out, &errb); code != 0 {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "     3  missing from the ledger") || !strings.Contains(out.String(), "dry_run") {
		t.Fatalf("dry run output:\n%s", out.String())
	}
	out.Reset()
	if code := run(t.Context(), args, &out, &errb); code != 0 {
		t.Fatalf("reconcile: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "     3  fed through the receiver and accepted") {
		t.Fatalf("reconcile output:\n%s", out.String())
	}
	deadline := time.Now().Add(60 * time.Second)
	for charges, _, _, _ := fx.counts(); charges < invoices && time.Now().Before(deadline); charges, _, _, _ = fx.counts() {
		time.Sleep(100 * time.Millisecond)
	}
	if charges, _, twice, _ := fx.counts(); charges != invoices || twice != 0 {
		t.Fatalf("%d charges (%d twice): want %d invoices charged once each", charges, twice, invoices)
	}
	out.Reset()
	if code := run(t.Context(), append(args, "--json"), &out, &errb); code != 0 {
		t.Fatalf("second run: exit %d %s", code, errb.String())
	}
	var rep reconcile.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Missing != 0 || rep.InLedger != 3 {
		t.Fatalf("second run: %+v %v\n%s", rep.Counts, err, out.String())
	}
	if charges, notes, _, _ := fx.counts(); charges != invoices || notes != invoices {
		t.Fatalf("after the second run: %d charges, %d notifications; want %d each", charges, notes, invoices)
	}
}

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
	api := httptest.NewServer(providerstub.New(providerstub.Options{GitHubToken: token}))
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
