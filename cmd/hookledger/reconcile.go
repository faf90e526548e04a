package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/reconcile"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
)

const reconcileHelp = `Asks the provider's API which events it sent, or failed to send, to the
source's endpoint in the window, and feeds each one the ledger lacks
through the receiver: rebuilt from the API's copy, signed with the tenant's
webhook secret, and posted to the webhook URL (or handed to the receiver
function), so it is verified, keyed and deduplicated like any delivery.
Run it after an outage longer than the sender retries (Stripe: 3 days;
GitHub: never), or after a wrong secret made the sender give up. A second
run finds nothing missing.

Providers: stripe (List Events; only undelivered events unless --all, e.g.
after the endpoint was disabled) and github (the hook's deliveries, 3 days;
--redeliver asks GitHub to send them again). The source's verifier and
secrets come from HOOKLEDGER_SOURCES (or the --receiver-function's
configuration); the credential, hook and options from the --source/--tenant
entry of HOOKLEDGER_RECONCILE (or --config FILE), or from flags.

Keep the API key off the command line: --credential literal:VALUE lands in
your shell history and in process listings (ps). Use --credential-file
PATH (the key alone), --credential - (stdin), or a reference: env:NAME,
ssm:/name, secretsmanager:id.

  hookledger reconcile --source stripe --tenant acme --dry-run
  hookledger reconcile --source stripe --tenant acme --since 72h --url "$WEBHOOK_URL"
  hookledger reconcile --source github --tenant acme --credential env:GITHUB_TOKEN \
      --hook repos/acme/shop/hooks/123 --receiver-function mystack-receiver

The window must stay inside the deployed receiver's retention: with
--receiver-function its HOOKLEDGER_RETENTION is read (a different one here
is refused); without it, set HOOKLEDGER_RETENTION to the deployed value, or
the least a receiver keeps is assumed. A raised retention protects only
records written after it. Run by cron, keep --since at least the interval
plus --min-age, or events between runs are never checked.

--api-url may point only at the provider's API or a local stub (localhost,
127.0.0.1, ::1; the only hosts plain http may reach): the credential goes
there, and its answers get signed. For GitHub Enterprise Server
(https://HOST/api/v3), a proxy or a test host you run, add --trust-api-url.

Exit status: 0 when every missing event was fed (or, with --dry-run,
listed), 1 when any could not be or the provider's API failed, 2 on bad usage.
`

func runReconcile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code := parseReconcile(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	c, err := config.Load(os.Getenv)
	if err != nil {
		return cli.Fail(stderr, "reconcile", 2, err)
	}
	spec, err := reconcileSpec(f.sp, f.set, f.cfgFile)
	if err != nil {
		return cli.Fail(stderr, "reconcile", 2, err)
	}
	awsCfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		return cli.Fail(stderr, "reconcile", 1, err)
	}
	if code := f.retention(ctx, &c, awsCfg, stderr); code >= 0 {
		return code
	}
	rc, l, err := reconcile.NewConfig(c, awsCfg, os.Getenv)
	if err != nil {
		return cli.Fail(stderr, "reconcile", 2, err)
	}
	if err := rc.Check(spec); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 2
	}
	r := &reconcile.Reconciler{Ledger: l, Log: c.Logger(stderr)}
	if code := f.feeder(r, spec, awsCfg, stderr); code >= 0 {
		return code
	}
	job, err := rc.Job(ctx, spec, f.dry)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	rep, err := r.Run(ctx, job)
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printReconcile(stdout, rep, job)
	}
	if err != nil {
		return cli.Fail(stderr, "reconcile", 1, err)
	}
	if rep.Failed > 0 {
		return 1
	}
	return 0
}

// reconcileFlags is what hookledger reconcile was asked to do.
type reconcileFlags struct {
	sp               reconcile.Spec  // the flags that make up a reconcile entry
	set              map[string]bool // the flags given
	dry, asJSON      bool
	url, fn, cfgFile string
}

// parseReconcile reads reconcile's flags and credential; code >= 0 means exit with it.
func parseReconcile(args []string, stdout, stderr io.Writer) (f reconcileFlags, code int) {
	fs := cli.NewFlags("hookledger", "reconcile", "reconcile --source S --tenant T [--since DURATION] [--dry-run] [--url WEBHOOK_URL | --receiver-function NAME] [flags]", stderr)
	sp := &f.sp
	fs.StringVar(&sp.Source, "source", "", "the source to reconcile (a name in HOOKLEDGER_SOURCES; required)")
	fs.StringVar(&sp.Tenant, "tenant", "", "the tenant (required)")
	fs.StringVar(&sp.Window, "since", "", "how far back to look, a Go duration (default: as far as the provider keeps events, Stripe 30 days, GitHub 3 days, capped at the deployed receiver's HOOKLEDGER_RETENTION minus 1h)")
	fs.BoolVar(&f.dry, "dry-run", false, "list the missing events; feed nothing")
	fs.StringVar(&f.url, "url", os.Getenv("HOOKLEDGER_WEBHOOK_URL"), "feed through this webhook URL: the stack's WebhookUrl output, https://.../webhooks/{source}/{tenant} (default $HOOKLEDGER_WEBHOOK_URL)")
	fs.StringVar(&f.fn, "receiver-function", os.Getenv("HOOKLEDGER_RECEIVER_FUNCTION"), "or feed by invoking this receiver function with the HTTP API's event (default $HOOKLEDGER_RECEIVER_FUNCTION)")
	fs.StringVar(&f.cfgFile, "config", "", "read the reconcile entries (a JSON array, as HOOKLEDGER_RECONCILE) from this file")
	fs.StringVar(&sp.Credential, "credential", "", "the provider API credential as a secret reference (ssm:/name, secretsmanager:id, env:NAME, literal:VALUE), or - to read it from stdin: a Stripe secret or restricted key with Events read, a GitHub token with Webhooks read (literal: shows in shell history and ps)")
	credFile := fs.String("credential-file", "", "read the provider API credential from this file (the key alone; surrounding whitespace is ignored)")
	fs.StringVar(&sp.APIURL, "api-url", "", "the provider's API base URL (default https://api.stripe.com or https://api.github.com; another host needs --trust-api-url)")
	fs.BoolVar(&sp.TrustAPIURL, "trust-api-url", false, "send the credential to an --api-url that is not the provider's own API (GitHub Enterprise Server https://HOST/api/v3, a proxy, a test host) and feed what it answers")
	fs.StringVar(&sp.MinAge, "min-age", "", "leave events younger than this to the sender's own delivery and retries (default 10m)")
	fs.BoolVar(&sp.All, "all", false, "stripe: every event in the window, not only those Stripe reports undelivered (after the endpoint was disabled; combine with --types)")
	types := fs.String("types", "", "stripe: only these event types, comma-separated (your endpoint's enabled events; invoice.* matches a family)")
	fs.StringVar(&sp.Account, "account", "", "stripe: a connected account id (Stripe-Account)")
	fs.StringVar(&sp.Hook, "hook", "", "github: the webhook's API path, repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID")
	fs.BoolVar(&sp.Redeliver, "redeliver", false, "github: ask GitHub to redeliver each missing event (genuine, byte-identical deliveries; needs Webhooks write) instead of feeding rebuilt ones")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	synopsis := fs.Usage
	fs.Usage = func() {
		synopsis()
		fmt.Fprint(fs.Output(), "\n"+reconcileHelp)
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return f, code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "reconcile: unexpected argument %q\n", fs.Arg(0))
		return f, 2
	}
	if sp.Source == "" || sp.Tenant == "" {
		fmt.Fprintln(stderr, "reconcile: --source and --tenant are required, e.g. hookledger reconcile --source stripe --tenant acme --dry-run")
		return f, 2
	}
	if *types != "" {
		sp.Types = strings.Split(*types, ",")
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	return f, f.credential(*credFile, stderr)
}

// credential reads --credential-file or stdin into a literal; code >= 0 means exit with it.
func (f *reconcileFlags) credential(file string, stderr io.Writer) int {
	if !f.set["credential-file"] && f.sp.Credential != "-" {
		return -1
	}
	if f.set["credential-file"] && f.set["credential"] {
		fmt.Fprintln(stderr, "reconcile: give --credential or --credential-file, not both")
		return 2
	}
	from, r := "stdin", io.Reader(reconcileStdin)
	if f.set["credential-file"] {
		fh, err := os.Open(file)
		if err != nil {
			fmt.Fprintf(stderr, "reconcile: --credential-file: %v\n", err)
			return 2
		}
		defer fh.Close()
		from, r = file, fh
	}
	ref, err := readCredential(r, from)
	if err != nil {
		return cli.Fail(stderr, "reconcile", 2, err)
	}
	f.sp.Credential, f.set["credential"] = ref, true
	return -1
}

// retention sets c's retention to the deployed receiver's; code >= 0 means exit with it.
func (f *reconcileFlags) retention(ctx context.Context, c *config.Config, awsCfg aws.Config, stderr io.Writer) int {
	switch shellRetention := strings.TrimSpace(os.Getenv("HOOKLEDGER_RETENTION")); {
	case f.fn != "":
		// Its sources when there are no local ones, and always its retention.
		if err := reconcile.ReceiverSources(ctx, c, lambda.NewFromConfig(awsCfg), f.fn, shellRetention); err != nil {
			fmt.Fprintf(stderr, "reconcile: %v\n", err)
			if strings.Contains(err.Error(), "HOOKLEDGER_RETENTION=") {
				return 2
			}
			return 1
		}
	case shellRetention == "":
		// Nothing to ask, and the default (168h) may exceed the receiver's:
		// assume the least any receiver keeps.
		c.Retention = ledger.MinRetention
		fmt.Fprintf(stderr, "reconcile: HOOKLEDGER_RETENTION is not set and no --receiver-function gives the deployed one: assuming the least a receiver keeps records (%v, raised to the provider's retry horizon); set HOOKLEDGER_RETENTION to the deployed value to look further back\n", ledger.MinRetention)
	}
	return -1
}

// feeder gives r the receiver's webhook URL or function; code >= 0 means exit with it.
func (f *reconcileFlags) feeder(r *reconcile.Reconciler, spec reconcile.Spec, awsCfg aws.Config, stderr io.Writer) int {
	switch {
	case f.url != "" && f.fn != "" && f.set["url"] && f.set["receiver-function"]:
		fmt.Fprintln(stderr, "reconcile: give --url or --receiver-function, not both")
		return 2
	case f.fn != "" && !f.set["url"]:
		r.Feeder = &reconcile.LambdaFeeder{API: lambda.NewFromConfig(awsCfg), Function: f.fn}
	case f.url != "":
		if err := reconcile.ParseWebhookURL(f.url); err != nil {
			fmt.Fprintf(stderr, "reconcile: --url: %v\n", err)
			return 2
		}
		r.Feeder = &reconcile.HTTPFeeder{Webhook: f.url, Client: &http.Client{Timeout: 30 * time.Second, Transport: cli.LocalhostTransport()}}
	case !f.dry && !spec.Redeliver:
		fmt.Fprintln(stderr, "reconcile: nowhere to feed missing events: give --url (the stack's WebhookUrl output) or --receiver-function (the receiver function's name), or --dry-run to only list them")
		return 2
	}
	return -1
}

// reconcileStdin is where --credential - reads from (a test swaps it).
var reconcileStdin io.Reader = os.Stdin

// maxCredential bounds a credential read: a key or token is a few hundred bytes.
const maxCredential = 16 << 10

// readCredential reads a credential into a literal reference, kept in this process's memory.
func readCredential(r io.Reader, from string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxCredential+1))
	if err != nil {
		return "", fmt.Errorf("reading the credential from %s: %w", from, err)
	}
	if len(b) > maxCredential {
		return "", fmt.Errorf("the credential from %s is over %d KB; it should hold the API key or token alone", from, maxCredential>>10)
	}
	v := strings.TrimSpace(string(b))
	switch {
	case v == "":
		return "", fmt.Errorf("the credential from %s is empty", from)
	case strings.ContainsAny(v, "\r\n"):
		return "", fmt.Errorf("the credential from %s has more than one line; it should hold the API key or token alone", from)
	}
	return "literal:" + v, nil
}

// reconcileSpec lays the flags given over the source/tenant's entry, if any.
func reconcileSpec(flags reconcile.Spec, set map[string]bool, file string) (reconcile.Spec, error) {
	data := []byte(os.Getenv("HOOKLEDGER_RECONCILE"))
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return reconcile.Spec{}, err
		}
		data = b
	} else if f := os.Getenv("HOOKLEDGER_RECONCILE_FILE"); len(data) == 0 && f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return reconcile.Spec{}, fmt.Errorf("HOOKLEDGER_RECONCILE_FILE: %w", err)
		}
		data = b
	}
	spec := reconcile.Spec{Source: flags.Source, Tenant: flags.Tenant}
	if len(data) > 0 {
		specs, err := reconcile.ParseSpecs(data)
		if err != nil {
			return reconcile.Spec{}, err
		}
		for _, s := range specs {
			if s.Source == flags.Source && s.Tenant == flags.Tenant {
				spec = s
			}
		}
	}
	for name, apply := range map[string]func(){
		"since": func() { spec.Window = flags.Window }, "credential": func() { spec.Credential = flags.Credential },
		"api-url": func() { spec.APIURL = flags.APIURL }, "min-age": func() { spec.MinAge = flags.MinAge },
		"all": func() { spec.All = flags.All }, "types": func() { spec.Types = flags.Types },
		"account": func() { spec.Account = flags.Account }, "hook": func() { spec.Hook = flags.Hook },
		"redeliver": func() { spec.Redeliver = flags.Redeliver }, "trust-api-url": func() { spec.TrustAPIURL = flags.TrustAPIURL },
	} {
		if set[name] {
			apply()
		}
	}
	if spec.Credential == "" {
		return spec, errors.New("no API credential for " + spec.Source + "/" + spec.Tenant + ": give --credential-file PATH, --credential - (stdin), --credential with a secret reference such as env:STRIPE_API_KEY or ssm:/hookledger/acme/stripe-api, or an entry in HOOKLEDGER_RECONCILE")
	}
	return spec, nil
}

func printReconcile(w io.Writer, rep reconcile.Report, job reconcile.Job) {
	mode := ""
	if rep.DryRun {
		mode = " (dry run: nothing fed)"
	}
	fmt.Fprintf(w, "reconcile %s/%s against the %s API: %s, since %s (%v)%s\n", rep.Source, rep.Tenant, rep.Provider,
		rep.Scope, rep.Since.Format(time.RFC3339), job.Window, mode)
	rows := []struct {
		n    int
		what string
	}{
		{rep.Seen, "listed by the provider"},
		{rep.InLedger, "already in the ledger"},
		{rep.Missing, "missing from the ledger"},
		{rep.Fed, "fed through the receiver and accepted (recovered)"},
		{rep.Duplicate, "fed, answered duplicate (it arrived meanwhile)"},
		{rep.Requested, "redelivery requested from the provider (requested, not yet seen: a later run confirms)"},
		{rep.Failed, "failed (see below; run again once the cause is fixed)"},
		{rep.TooRecent, fmt.Sprintf("younger than %v, left to the sender", job.MinAge)},
		{rep.TooOld, "not judged: original delivery before the window"},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%6d  %s\n", r.n, r.what)
	}
	if len(rep.Found) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tAT\tRESULT")
	const most = 50
	for i, f := range rep.Found {
		if i == most {
			fmt.Fprintf(tw, "(%d more; --json lists every one)\n", len(rep.Found)-most)
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Key, f.Type, f.At.Format(time.RFC3339), f.Result)
	}
	tw.Flush()
}
