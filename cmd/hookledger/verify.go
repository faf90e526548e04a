package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/webhook"
)

// The verify and sign contract, kept stable for scripts; --help prints it
// on stdout and exits 0. Exit 3 from verify is the receiver's 400.
const (
	verifySynopsis = "verify --provider NAME --secret S [--secret S2 ...] [--url URL] [--now UNIX_SECONDS] [--header 'Name: value' ...] (--body-file F | --body STRING)\n" +
		"       [--signature-header NAME --prefix P --encoding hex|base64 --algorithm sha1|sha256|sha512]   (generic only)\n\n" +
		"Exit 0: valid; the idempotency key is printed alone on stdout (nothing for a handshake).\n" +
		"Exit 1: signature invalid (or its timestamp outside the tolerance); the reason is on stderr.\n" +
		"Exit 3: signature valid, but no idempotency key can be extracted or derived; the reason is on stderr.\n" +
		"Exit 2: usage error."
	signSynopsis = "sign --provider NAME --secret S [--now UNIX_SECONDS] [--url URL] [--id ID] [--type TYPE] (--body-file F | --body STRING)\n\n" +
		"Prints the headers a sender would send, one 'Name: value' per line, sorted.\n" +
		"Exit 1: the message cannot be signed (the reason is on stderr). Exit 2: usage error."
)

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// deliveryFlags are the flags verify and sign share.
type deliveryFlags struct {
	fs        *flag.FlagSet
	provider  string
	secrets   repeated
	url       string
	now       string
	body      string
	bodyFile  string
	sigHeader string
	prefix    string
	encoding  string
	algorithm string
}

// newDeliveryFlags declares the shared flags; parse handles --help.
func newDeliveryFlags(name, synopsis string, stderr io.Writer) *deliveryFlags {
	d := &deliveryFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	fs := d.fs
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: hookledger %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	fs.StringVar(&d.provider, "provider", "", "signature scheme (required): "+strings.Join(webhook.Providers(), ", "))
	fs.Var(&d.secrets, "secret", "signing secret, as the provider shows it (required; verify: repeat while a secret rotates)")
	fs.StringVar(&d.url, "url", "", "the URL the sender posts to (twilio and square sign it)")
	fs.StringVar(&d.now, "now", "", "the current time as Unix seconds (default: the clock)")
	fs.StringVar(&d.body, "body", "", "the raw body")
	fs.StringVar(&d.bodyFile, "body-file", "", "read the raw body from this file")
	fs.StringVar(&d.sigHeader, "signature-header", "", "generic: header carrying the signature (default X-Signature)")
	fs.StringVar(&d.prefix, "prefix", "", "generic: text before the signature, e.g. sha256=")
	fs.StringVar(&d.encoding, "encoding", "", "generic: hex (default) or base64")
	fs.StringVar(&d.algorithm, "algorithm", "", "generic: sha1, sha256 (default) or sha512")
	return d
}

// delivery is what the shared flags resolve to.
type delivery struct {
	verifier *webhook.Verifier
	now      time.Time
	body     []byte
}

// parse parses args and resolves the shared flags; code >= 0 means exit.
func (d *deliveryFlags) parse(args []string, stdout, stderr io.Writer) (delivery, int) {
	name := d.fs.Name()
	usageErr := func(format string, a ...any) (delivery, int) {
		fmt.Fprintf(stderr, "hookledger %s: "+format+"\n", append([]any{name}, a...)...)
		fmt.Fprintf(stderr, "Run 'hookledger %s --help' for usage.\n", name)
		return delivery{}, 2
	}
	usage := d.fs.Usage
	d.fs.Usage = func() {} // flag reports its own errors; usage is printed below
	err := d.fs.Parse(args)
	d.fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		d.fs.SetOutput(stdout)
		d.fs.Usage()
		return delivery{}, 0
	case err != nil:
		fmt.Fprintf(stderr, "Run 'hookledger %s --help' for usage.\n", name)
		return delivery{}, 2
	case d.fs.NArg() > 0:
		return usageErr("unexpected argument %q", d.fs.Arg(0))
	}
	set := map[string]bool{}
	d.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	if d.provider == "" {
		return usageErr("--provider is required (one of %s)", strings.Join(webhook.Providers(), ", "))
	}
	if !slices.Contains(webhook.Providers(), d.provider) {
		return usageErr("unknown provider %q (one of %s)", d.provider, strings.Join(webhook.Providers(), ", "))
	}
	if len(d.secrets) == 0 || slices.Contains(d.secrets, "") {
		return usageErr("--secret is required and must not be empty")
	}
	cfg := webhook.Config{Provider: d.provider}
	generic := []string{"signature-header", "prefix", "encoding", "algorithm"}
	if d.provider == "generic" {
		cfg.Generic = &webhook.GenericConfig{SignatureHeader: d.sigHeader, Prefix: d.prefix, Encoding: d.encoding, Algorithm: d.algorithm}
	} else {
		for _, g := range generic {
			if set[g] {
				return usageErr("--%s is only for --provider generic", g)
			}
		}
	}
	v, err := webhook.New(cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	out := delivery{verifier: v, now: time.Now()}
	if set["now"] {
		n, err := strconv.ParseInt(d.now, 10, 64)
		if err != nil || n < 0 {
			return usageErr("--now %q: want Unix seconds", d.now)
		}
		out.now = time.Unix(n, 0)
	}
	switch {
	case set["body"] && set["body-file"]:
		return usageErr("give --body or --body-file, not both")
	case set["body"]:
		out.body = []byte(d.body)
	case set["body-file"]:
		b, err := os.ReadFile(d.bodyFile)
		if err != nil {
			return usageErr("--body-file: %v", err)
		}
		out.body = b
	default:
		return usageErr("a body is required: --body STRING or --body-file F")
	}
	return out, -1
}

// parseHeader reads a --header value, "Name: value".
func parseHeader(s string) (string, string, error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
		return "", "", fmt.Errorf("--header %q: want 'Name: value'", s)
	}
	return name, strings.TrimSpace(value), nil
}

// runVerify implements `hookledger verify`; returns the exit code.
func runVerify(args []string, stdout, stderr io.Writer) int {
	d := newDeliveryFlags("verify", verifySynopsis, stderr)
	var headers repeated
	d.fs.Var(&headers, "header", "a request header, 'Name: value' (repeat for each header)")
	del, code := d.parse(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	h := http.Header{}
	for _, raw := range headers {
		name, value, err := parseHeader(raw)
		if err != nil {
			return cli.Fail(stderr, "hookledger verify", 2, err)
		}
		h.Add(name, value)
	}
	req := &webhook.Request{Method: http.MethodPost, URL: d.url, Header: h, Body: del.body}
	ev, err := del.verifier.Verify(req, d.secrets, del.now)
	switch {
	case errors.Is(err, webhook.ErrNoKey):
		fmt.Fprintf(stderr, "hookledger verify: signature valid, but no key: %v\n", err)
		return 3
	case err != nil:
		fmt.Fprintf(stderr, "hookledger verify: invalid: %v\n", err)
		return 1
	}
	if ev.Handshake != nil {
		fmt.Fprintf(stderr, "hookledger verify: valid handshake; reply %d %s: %s\n", ev.Handshake.Status, ev.Handshake.ContentType, ev.Handshake.Body)
		return 0
	}
	if ev.ID != "" {
		fmt.Fprintln(stdout, ev.ID)
	}
	return 0
}

// runSign implements `hookledger sign`; returns the exit code.
func runSign(args []string, stdout, stderr io.Writer) int {
	d := newDeliveryFlags("sign", signSynopsis, stderr)
	id := d.fs.String("id", "", "event/delivery id, for schemes that send it in a header")
	typ := d.fs.String("type", "", "event type, for schemes that send it in a header")
	del, code := d.parse(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(d.secrets) != 1 {
		fmt.Fprintln(stderr, "hookledger sign: give exactly one --secret")
		return 2
	}
	h, err := del.verifier.Sign(webhook.Message{ID: *id, Type: *typ, Body: del.body, URL: d.url, Now: del.now}, d.secrets[0])
	if err != nil {
		return cli.Fail(stderr, "hookledger sign", 1, err)
	}
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, value := range h[name] {
			fmt.Fprintf(stdout, "%s: %s\n", name, value)
		}
	}
	return 0
}
