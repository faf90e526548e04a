package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runCLI runs f with args and returns its exit code, stdout and stderr.
func runCLI(f func([]string, *bytes.Buffer, *bytes.Buffer) int, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := f(args, &out, &errb)
	return code, out.String(), errb.String()
}

func verifyCLI(args ...string) (int, string, string) {
	return runCLI(func(a []string, o, e *bytes.Buffer) int { return runVerify(a, o, e) }, args...)
}

func signCLI(args ...string) (int, string, string) {
	return runCLI(func(a []string, o, e *bytes.Buffer) int { return runSign(a, o, e) }, args...)
}

// signedHeaders runs sign and turns its output into --header flags.
func signedHeaders(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errs := signCLI(args...)
	if code != 0 || errs != "" {
		t.Fatalf("sign %v: exit %d, stderr %q", args, code, errs)
	}
	var flags []string
	for line := range strings.Lines(out) {
		flags = append(flags, "--header", strings.TrimSuffix(line, "\n"))
	}
	return flags
}

func TestVerifyHelp(t *testing.T) {
	t.Parallel()
	for _, run := range []func(...string) (int, string, string){verifyCLI, signCLI} {
		for _, help := range []string{"--help", "-h", "-help"} {
			code, out, errs := run(help)
			if code != 0 || !strings.HasPrefix(out, "usage: hookledger ") || !strings.Contains(out, "--provider") || errs != "" {
				t.Errorf("%s: exit %d, stdout %q, stderr %q", help, code, out, errs)
			}
		}
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	t.Parallel()
	body := []string{"--body", "{}"}
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no flags", nil, "--provider"},
		{"unknown flag", []string{"--provider", "stripe", "--secret", "s", "--body", "{}", "--bogus"}, "bogus"},
		{"missing provider", append([]string{"--secret", "s"}, body...), "--provider"},
		{"unknown provider", append([]string{"--provider", "paypal", "--secret", "s"}, body...), `unknown provider "paypal"`},
		{"missing secret", append([]string{"--provider", "stripe"}, body...), "--secret"},
		{"empty secret", append([]string{"--provider", "stripe", "--secret", ""}, body...), "--secret"},
		{"missing body", []string{"--provider", "stripe", "--secret", "s"}, "body"},
		{"both bodies", []string{"--provider", "stripe", "--secret", "s", "--body", "{}", "--body-file", "x.json"}, "not both"},
		{"unreadable body file", []string{"--provider", "stripe", "--secret", "s", "--body-file", "/nonexistent/body.json"}, "--body-file"},
		{"bad now", append([]string{"--provider", "stripe", "--secret", "s", "--now", "yesterday"}, body...), "--now"},
		{"bad header", append([]string{"--provider", "stripe", "--secret", "s", "--header", "no colon"}, body...), "--header"},
		{"generic flag on stripe", append([]string{"--provider", "stripe", "--secret", "s", "--prefix", "sha256="}, body...), "--prefix"},
		{"bad generic encoding", append([]string{"--provider", "generic", "--secret", "s", "--encoding", "base32"}, body...), "encoding"},
		{"bad generic algorithm", append([]string{"--provider", "generic", "--secret", "s", "--algorithm", "md5"}, body...), "algorithm"},
		{"positional argument", append([]string{"--provider", "stripe", "--secret", "s", "extra"}, body...), "extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := verifyCLI(tt.args...)
			if code != 2 || out != "" || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q on stderr", code, out, errs, tt.want)
			}
		})
	}
	t.Run("sign with two secrets", func(t *testing.T) {
		t.Parallel()
		if code, _, errs := signCLI("--provider", "github", "--secret", "a", "--secret", "b", "--id", "1", "--type", "t", "--body", "{}"); code != 2 || errs == "" {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
	})
	t.Run("sign unknown provider", func(t *testing.T) {
		t.Parallel()
		if code, _, errs := signCLI("--provider", "paypal", "--secret", "a", "--body", "{}"); code != 2 || !strings.Contains(errs, "paypal") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
	})
}

// TestVerifyVectors runs published vectors through the CLI.
func TestVerifyVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantOut string
	}{
		{
			// Source: https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
			name: "github docs",
			args: []string{"--provider", "github", "--secret", "It's a Secret to Everybody", "--body", "Hello, World!",
				"--header", "X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
				"--header", "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958", "--header", "X-GitHub-Event: ping"},
			wantOut: "72d3162e-cc78-11e3-81ab-4c9367dc0958\n",
		},
		{
			// Source: https://github.com/square/square-python-sdk/blob/master/tests/utilities/test_webhooks_helper.py
			name: "square sdk",
			args: []string{"--provider", "square", "--secret", "Ibxx_5AKakO-3qeNVR61Dw",
				"--url", "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9",
				"--header", "x-square-hmacsha256-signature: GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=",
				"--body", `{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`},
			wantOut: "ac3ac95b-f97d-458c-a6e6-18981597e05f\n",
		},
		{
			// Source: https://github.com/twilio/twilio-python/blob/main/tests/unit/test_request_validator.py
			// (rotation: the first secret is someone else's).
			name: "twilio sdk, two secrets",
			args: []string{"--provider", "twilio", "--secret", "67890", "--secret", "12345",
				"--url", "https://mycompany.com/myapp.php?foo=1&bar=2",
				"--header", "X-Twilio-Signature: RSOYDt4T1cUTdK1PDd93/VVr8B8=", "--header", "I-Twilio-Idempotency-Token: idem-1",
				"--body", "CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309&To=%2B18005551212&Caller=%2B14158675309"},
			wantOut: "idem-1\n",
		},
		{
			// Source: https://api.slack.com/authentication/verifying-requests-from-slack
			// A url_verification handshake: valid, no key.
			name: "slack handshake",
			args: slices.Concat([]string{"--provider", "slack", "--secret", "8f742231b10e8888abcd99yyyzzz85a5", "--now", "1700000000"},
				signedHeaders(t, "--provider", "slack", "--secret", "8f742231b10e8888abcd99yyyzzz85a5", "--now", "1700000000", "--body", `{"type":"url_verification","challenge":"abc"}`),
				[]string{"--body", `{"type":"url_verification","challenge":"abc"}`}),
			wantOut: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := verifyCLI(tt.args...)
			if code != 0 || out != tt.wantOut {
				t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errs, tt.wantOut)
			}
		})
	}
}

// TestSignThenVerify signs with the CLI for every provider and verifies the
// result, then checks that a tampered body or a wrong secret exits 1.
func TestSignThenVerify(t *testing.T) {
	t.Parallel()
	const secret = "whsec_aG9va2xlZGdlci1jbGktc2VjcmV0LTMyLWJ5dGVzISE="
	jsonBody := `{"id":"evt_1","event_id":"evt_1","event_type":"x","type":"x","topic":"x","event":"x","webhookTimestamp":1700000000000}`
	tests := []struct {
		provider string
		extra    []string
		body     string
		wantKey  string // "derived" for a derived key
	}{
		{provider: "stripe", body: jsonBody, wantKey: "evt_1"},
		{provider: "github", extra: []string{"--id", "d-1", "--type", "push"}, body: jsonBody, wantKey: "d-1"},
		{provider: "shopify", extra: []string{"--id", "w-1", "--type", "orders/create"}, body: jsonBody, wantKey: "w-1"},
		{provider: "standard-webhooks", extra: []string{"--id", "msg_1"}, body: jsonBody, wantKey: "msg_1"},
		{provider: "svix", extra: []string{"--id", "msg_1"}, body: jsonBody, wantKey: "msg_1"},
		{provider: "slack", body: jsonBody, wantKey: "evt_1"},
		{provider: "square", extra: []string{"--url", "https://hooks.example.com/sq"}, body: jsonBody, wantKey: "evt_1"},
		{provider: "paddle", body: jsonBody, wantKey: "evt_1"},
		{provider: "twilio", extra: []string{"--url", "https://hooks.example.com/tw", "--id", "idem-1"}, body: "A=1&B=2", wantKey: "idem-1"},
		{provider: "linear", extra: []string{"--id", "del-1", "--type", "Issue"}, body: jsonBody, wantKey: "del-1"},
		{provider: "zoom", body: jsonBody, wantKey: "derived"},
		{provider: "twitch", extra: []string{"--id", "m-1", "--type", "channel.follow"}, body: jsonBody, wantKey: "m-1"},
		{provider: "intercom", body: jsonBody, wantKey: "evt_1"},
		{provider: "gitlab", extra: []string{"--id", "g-1", "--type", "Push Hook"}, body: jsonBody, wantKey: "g-1"},
		{provider: "generic", extra: []string{"--signature-header", "X-Acme-Sig", "--prefix", "sha512=", "--encoding", "base64", "--algorithm", "sha512"}, body: jsonBody, wantKey: "derived"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			common := slices.Concat([]string{"--provider", tt.provider, "--now", "1700000000"}, tt.extra)
			signArgs := slices.Concat(common, []string{"--secret", secret, "--body", tt.body})
			headers := signedHeaders(t, signArgs...)
			if !slices.IsSorted(headerNames(headers)) {
				t.Errorf("sign output not sorted: %q", headers)
			}
			shared := withoutSignOnly(common)
			verifyArgs := slices.Concat(shared, headers, []string{"--secret", "whsec_b2xkLXNlY3JldC1vbGQtc2VjcmV0LW9sZA==", "--secret", secret})
			code, out, errs := verifyCLI(append(verifyArgs, "--body", tt.body)...)
			switch {
			case code != 0 || errs != "":
				t.Fatalf("verify: exit %d, stderr %q", code, errs)
			case tt.wantKey == "derived" && (!strings.HasPrefix(out, "derived:") || strings.Count(out, "\n") != 1):
				t.Errorf("stdout %q, want one derived key", out)
			case tt.wantKey != "derived" && out != tt.wantKey+"\n":
				t.Errorf("stdout %q, want %q", out, tt.wantKey+"\n")
			}
			tampered := strings.Replace(tt.body, "1", "2", 1)
			if tt.provider != "gitlab" { // a shared token does not cover the body
				if code, out, errs := verifyCLI(append(verifyArgs, "--body", tampered)...); code != 1 || out != "" || !strings.Contains(errs, "bad signature") {
					t.Errorf("tampered body: exit %d, stdout %q, stderr %q; want 1, bad signature", code, out, errs)
				}
			}
			wrong := slices.Concat(shared, headers, []string{"--secret", "whsec_c29tZW9uZS1lbHNlcy1zZWNyZXQtMzItYnl0ZXMhISE=", "--body", tt.body})
			if code, out, errs := verifyCLI(wrong...); code != 1 || out != "" || errs == "" {
				t.Errorf("wrong secret: exit %d, stdout %q, stderr %q; want 1", code, out, errs)
			}
		})
	}
}

// withoutSignOnly drops the flags only sign takes (--id, --type).
func withoutSignOnly(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--id" || args[i] == "--type" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

func headerNames(flags []string) []string {
	var names []string
	for i := 1; i < len(flags); i += 2 {
		name, _, _ := strings.Cut(flags[i], ":")
		names = append(names, name)
	}
	return names
}

func TestVerifyOutsideTolerance(t *testing.T) {
	t.Parallel()
	const secret = "whsec_test"
	headers := signedHeaders(t, "--provider", "stripe", "--secret", secret, "--now", "1700000000", "--body", `{"id":"evt_1"}`)
	args := slices.Concat([]string{"--provider", "stripe", "--secret", secret, "--now", "1700000301", "--body", `{"id":"evt_1"}`}, headers)
	if code, out, errs := verifyCLI(args...); code != 1 || out != "" || !strings.Contains(errs, "tolerance") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and a tolerance reason", code, out, errs)
	}
	if code, _, errs := verifyCLI(slices.Concat([]string{"--provider", "stripe", "--secret", secret, "--now", "1700000000", "--body", `{"id":"evt_1"}`})...); code != 1 || !strings.Contains(errs, "missing header") {
		t.Errorf("no headers: exit %d, stderr %q; want 1, missing header", code, errs)
	}
}

func TestVerifyBodyFile(t *testing.T) {
	t.Parallel()
	const secret = "It's a Secret to Everybody"
	file := filepath.Join(t.TempDir(), "body.txt")
	if err := os.WriteFile(file, []byte("Hello, World!"), 0o600); err != nil {
		t.Fatal(err)
	}
	headers := signedHeaders(t, "--provider", "github", "--secret", secret, "--id", "d-9", "--type", "ping", "--body-file", file)
	if !slices.Contains(headers, "X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17") {
		t.Errorf("sign --body-file headers %q lack GitHub's documented signature", headers)
	}
	code, out, errs := verifyCLI(slices.Concat([]string{"--provider", "github", "--secret", secret, "--body-file", file}, headers)...)
	if code != 0 || out != "d-9\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestSignOutput(t *testing.T) {
	t.Parallel()
	code, out, errs := signCLI("--provider", "paddle", "--secret", "pdl_ntfset_x", "--now", "1710929255", "--body", "{}")
	want := "Content-Type: application/json\nPaddle-Signature: ts=1710929255;h1="
	if code != 0 || errs != "" || !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 2 {
		t.Errorf("exit %d, stdout %q, stderr %q; want it to start %q", code, out, errs, want)
	}
	// A message the scheme cannot sign exits 1 with the reason.
	if code, out, errs := signCLI("--provider", "github", "--secret", "s", "--body", "{}"); code != 1 || out != "" || !strings.Contains(errs, "ID") {
		t.Errorf("github without --id: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// hookledger verify tells a bad signature (1) from a valid signature with no
// key (3); before, both were exit 1. The generic provider without an id
// header derives the key of a body that is not JSON from its raw digest, so
// that delivery is valid (0) rather than keyless.
func TestVerifyExitCodesTellSignatureFromKey(t *testing.T) {
	t.Parallel()
	const secret = "whsec_verify_exit_codes"
	now := []string{"--now", "1700000000"}
	stripe := func(body, signWith string) []string {
		return slices.Concat([]string{"--provider", "stripe", "--secret", secret}, now,
			signedHeaders(t, slices.Concat([]string{"--provider", "stripe", "--secret", signWith, "--body", body}, now)...),
			[]string{"--body", body})
	}
	generic := func(body string) []string {
		return slices.Concat([]string{"--provider", "generic", "--secret", secret},
			signedHeaders(t, "--provider", "generic", "--secret", secret, "--body", body), []string{"--body", body})
	}
	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  string
		stderrs string
	}{
		{"valid", stripe(`{"id":"evt_1","type":"x"}`, secret), 0, "evt_1\n", ""},
		{"signature invalid", stripe(`{"id":"evt_1","type":"x"}`, "whsec_other"), 1, "", "invalid"},
		{"signature valid, no id", stripe(`{"type":"invoice.paid"}`, secret), 3, "", "signature valid, but no key"},
		{"signature valid, body not JSON", stripe(`id=evt_1`, secret), 3, "", "signature valid, but no key"},
		{"generic, body not JSON: raw digest", generic("plain text event 42"), 0,
			"derived:" + hexSHA256("\x00plain text event 42") + "\n", ""},
		{"generic, JSON body", generic(`{"a":1}`), 0, "derived:" + hexSHA256("\x00{\"a\":1}") + "\n", ""},
		{"usage", []string{"--provider", "stripe"}, 2, "", "--secret is required"},
	}
	for _, tt := range tests {
		code, out, errs := verifyCLI(tt.args...)
		if code != tt.code || out != tt.stdout || !strings.Contains(errs, tt.stderrs) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, stderr with %q", tt.name, code, out, errs, tt.code, tt.stdout, tt.stderrs)
		}
	}
}

func hexSHA256(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestVerifyRefusesAmbiguousDeliveries: verify said valid for a delivery the
// receiver refuses (a repeated header); it answers as the receiver does for
// a signature in upper-case hex, which GitHub's octokit accepts.
func TestVerifyRefusesAmbiguousDeliveries(t *testing.T) {
	t.Parallel()
	const secret = "gh-cli-secret"
	body := `{"ref":"refs/heads/main"}`
	headers := signedHeaders(t, "--provider", "github", "--secret", secret, "--id", "d-1", "--type", "push", "--body", body)
	verify := func(extra ...string) (int, string, string) {
		return verifyCLI(slices.Concat([]string{"--provider", "github", "--secret", secret, "--body", body}, headers, extra)...)
	}
	if code, out, errs := verify(); code != 0 || out != "d-1\n" {
		t.Fatalf("as signed: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := verify("--header", "X-Github-Delivery: d-2"); code != 3 || !strings.Contains(errs, "X-GitHub-Delivery") || !strings.Contains(errs, "repeated header") {
		t.Errorf("two delivery ids: exit %d, stderr %q; want 3 and repeated header", code, errs)
	}
	var upper []string
	for i, h := range headers {
		if name, value, ok := strings.Cut(h, ": "); ok && name == "X-Hub-Signature-256" {
			h = name + ": sha256=" + strings.ToUpper(strings.TrimPrefix(value, "sha256="))
		}
		if i%2 == 1 {
			upper = append(upper, "--header", h)
		}
	}
	code, out, errs := verifyCLI(slices.Concat([]string{"--provider", "github", "--secret", secret, "--body", body}, upper)...)
	if code != 0 || out != "d-1\n" {
		t.Errorf("upper-case signature: exit %d, stdout %q, stderr %q; want it valid", code, out, errs)
	}
}
