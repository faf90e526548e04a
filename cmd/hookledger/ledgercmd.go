package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/console"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/version"
)

// openLedgerAndStore opens the ledger and the S3 payload store, if any.
func openLedgerAndStore(ctx context.Context, stderr io.Writer, cmd string) (*ledger.Ledger, *blob.Store, bool) {
	c, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil, nil, false
	}
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil, nil, false
	}
	l, err := ledger.New(dynamodb.NewFromConfig(cfg), c.LedgerOptions())
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil, nil, false
	}
	return l, payloadStore(c, cfg), true
}

// useFormat, before a command writes to the ledger, refuses a table of a
// newer record format than this hookledger's and raises an older one
// (ledger.UseFormat).
func useFormat(ctx context.Context, l *ledger.Ledger, stderr io.Writer, cmd string) bool {
	if _, err := l.UseFormat(ctx, ledger.WriteByUpdate); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n%s", cmd, err, awsHint(err, os.Getenv))
		return false
	}
	return true
}

// payloadStore is the S3 payload store the configuration names, or nil.
func payloadStore(c config.Config, cfg aws.Config) *blob.Store {
	if c.PayloadBucket == "" {
		return nil
	}
	return &blob.Store{API: blob.NewClient(cfg), Bucket: c.PayloadBucket, Prefix: c.PayloadPrefix}
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "inspect", "inspect [--source stripe] [--tenant acme] [--body] ID", stderr)
	src := fs.String("source", "stripe", "the event's source")
	tenant := fs.String("tenant", "acme", "the event's tenant")
	withBody := fs.Bool("body", false, fmt.Sprintf("also print the stored body, as text (at most %d KB; it is the sender's data, treat it as untrusted)", console.BodyCap>>10))
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "inspect: give exactly one ID (the provider's event id), e.g. hookledger inspect --source stripe --tenant acme evt_123")
		return 2
	}
	switch {
	case *src == "":
		fmt.Fprintln(stderr, "inspect: --source is empty; give the event's source, the {source} of its webhook URL (e.g. --source stripe)")
		return 2
	case *tenant == "":
		fmt.Fprintln(stderr, "inspect: --tenant is empty; give the event's tenant, the {tenant} of its webhook URL (e.g. --tenant acme)")
		return 2
	case fs.Arg(0) == "":
		fmt.Fprintln(stderr, "inspect: ID is empty; give the provider's event id (hookledger list shows them)")
		return 2
	}
	l, store, ok := openLedgerAndStore(ctx, stderr, "inspect")
	if !ok {
		return 1
	}
	id := ledger.Key{Source: *src, Tenant: *tenant, ID: fs.Arg(0)}
	rec, err := l.Get(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		fmt.Fprintf(stderr, "inspect: no record for %s in table %s\n", id, l.Table())
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "inspect: %v\n%s", err, awsHint(err, os.Getenv))
		return 1
	}
	if rec.Format > ledger.Format {
		fmt.Fprintf(stderr, "inspect: the record is format %d, newer than this hookledger (%s) reads: its counts may be wrong; use hookledger %s or later\n",
			rec.Format, version.Version, rec.Release)
	}
	out := inspection(rec)
	body, err := blob.Body(ctx, l, store, rec)
	if err == nil {
		out["payload_bytes"] = len(body)
	} else {
		out["payload_error"] = err.Error()
	}
	if *withBody && err == nil {
		text, cut := console.BodyText(body)
		out["body"] = text
		if cut {
			out["body_truncated"] = true
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.Encode(out)
	return 0
}

// inspection is what inspect prints of a record, one key a line: the
// record, its run counters in words, each step's downstream key, and
// when the reclaimer gives up.
func inspection(rec ledger.Record) map[string]any {
	out := map[string]any{"record": rec, "runs": runsLine(rec)}
	if rec.Skipped != "" {
		// Skipped as stale: never ran, or after a run that may have applied it.
		out["skipped_as"] = processor.Stale
		if rec.EarlierRun() != "" {
			out["skipped_as"] = processor.StaleAfterRun
		}
	}
	if until := reclaimer.GiveUpAt(rec); !rec.Status.Terminal() && !until.IsZero() {
		// When the reclaimer marks it dead, should its runs keep being interrupted.
		out["gives_up_at"] = until
	}
	if len(rec.Steps) > 0 {
		// What each step passed downstream: check it there before resolving an indeterminate step.
		keys := map[string]string{}
		for name := range rec.Steps {
			keys[name] = engine.DownstreamKey(rec.Source, rec.Tenant, rec.ID, name)
		}
		out["downstream_keys"] = keys
	}
	return out
}

// runsLine says in words what a record's run counters mean.
func runsLine(r ledger.Record) string {
	line := fmt.Sprintf("%s begun: %s failed by the handler (HOOKLEDGER_MAX_ATTEMPTS counts these), %s interrupted (crashes, timeouts, lost leases, AWS errors; not counted)",
		plural(r.Attempts, "run"), plural(r.Failures, "run"), plural(r.Interrupted, "run"))
	if r.GivenBack > 0 {
		line += fmt.Sprintf(", %d of them given back before the handler ran (resource busy, body unreadable)", r.GivenBack)
	}
	if r.Status == ledger.Processing {
		line += ", the one in progress included"
	}
	line += "; " + plural(r.Reclaims, "re-drive") + " by the reclaimer"
	if r.Format < ledger.Format {
		// Written before 0.1.0: the counters it lacks are derived.
		line += fmt.Sprintf("; a format %d record: counters it lacks are derived (CHANGELOG.md, 0.1.0)", r.Format)
	}
	return line
}

const listHelp = `Lists ledger records, newest first (by when each was received, last
retried or buried), through the ledger's indexes: no scan of the table, a
bounded read per page however large it is. --since and --until select by the time
the event was received, in RFC 3339 (2026-01-02T15:04:05Z) or as a
duration ago (90m, 24h).

  hookledger list --status dead
  hookledger list --source stripe --tenant acme --since 2h
  hookledger list --type invoice.paid --status failed --limit 0
`

func runList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "list", "list [--source S] [--tenant T] [--status received|processing|done|failed|dead] [--type T] [--since T] [--until T] [--limit 50]", stderr)
	var q ledger.Query
	fs.StringVar(&q.Source, "source", "", "only events of this source")
	fs.StringVar(&q.Tenant, "tenant", "", "only events of this tenant")
	status := fs.String("status", "", "only records in this status")
	fs.StringVar(&q.Type, "type", "", "only events of this type")
	since := fs.String("since", "", "only events received at or after this time")
	until := fs.String("until", "", "only events received before this time")
	limit := fs.Int("limit", 50, "at most this many records (0: all)")
	synopsis := fs.Usage
	fs.Usage = func() {
		synopsis()
		fmt.Fprint(fs.Output(), "\n"+listHelp)
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	q.Status = ledger.Status(*status)
	if q.Status != "" && !q.Status.Valid() {
		fmt.Fprintf(stderr, "list: unknown status %q; want received, processing, done, failed or dead\n", *status)
		return 2
	}
	if *limit < 0 {
		fmt.Fprintf(stderr, "list: --limit %d: want a positive number of records, or 0 for all of them\n", *limit)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "list: unexpected argument %q; list takes only flags (to see one event: hookledger inspect ID)\n", fs.Arg(0))
		return 2
	}
	now := time.Now()
	var err error
	if q.Since, err = cli.ParseWhen(*since, now); err == nil {
		q.Until, err = cli.ParseWhen(*until, now)
	}
	if err == nil && !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		err = errors.New("--since must be before --until")
	}
	if err != nil {
		return cli.Fail(stderr, "list", 2, err)
	}
	l, _, ok := openLedgerAndStore(ctx, stderr, "list")
	if !ok {
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tTENANT\tID\tTYPE\tSTATUS\tATTEMPTS\tFAILED\tINTERRUPTED\tRECLAIMS\tUPDATED\tLAST ERROR")
	shown := 0
	for {
		q.Limit = ledger.MaxFindLimit
		if *limit > 0 {
			q.Limit = min(q.Limit, *limit-shown)
		}
		page, err := l.Find(ctx, q)
		if err != nil {
			tw.Flush()
			fmt.Fprintf(stderr, "list: %v\n%s", err, awsHint(err, os.Getenv))
			return 1
		}
		for _, r := range page.Records {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", r.Source, r.Tenant, r.ID, r.EventType, r.Status,
				r.Attempts, r.Failures, r.Interrupted, r.Reclaims, r.UpdatedAt.Format(time.RFC3339), oneLine(r.LastError))
		}
		shown += len(page.Records)
		if page.Next == "" {
			break
		}
		if *limit > 0 && shown >= *limit {
			tw.Flush()
			fmt.Fprintf(stderr, "list: more records match; raise --limit (0: all), or narrow with --since, --until or --status\n")
			return 0
		}
		q.After = page.Next
	}
	tw.Flush()
	return 0
}

// oneLine keeps a table row on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func runSetup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "setup", "setup [--table hookledger] [--queue hookledger] [--visibility 180] [--max-receives 5]", stderr)
	table := fs.String("table", "hookledger", "ledger table name (3 to 255 letters, digits, '_', '-' or '.')")
	name := fs.String("queue", "hookledger", fmt.Sprintf("queue name (its DLQ is NAME-dlq; 1 to %d letters, digits, '-' or '_')", queue.MaxQueueNameLen))
	vis := fs.Int("visibility", 180, fmt.Sprintf("queue visibility timeout in seconds, 1 to %d (at least 6x the processor timeout: dev's --function-timeout 30s needs 180)", queue.MaxVisibilityTimeout))
	receives := fs.Int("max-receives", queue.DefaultMaxReceiveCount, fmt.Sprintf("deliveries before a message moves to the DLQ, 1 to %d", queue.MaxMaxReceiveCount))
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "setup: unexpected argument %q; setup takes only flags (hookledger setup --help)\n", fs.Arg(0))
		return 2
	}
	spec := queue.QueueSpec{Name: *name, VisibilityTimeout: *vis, MaxReceiveCount: *receives}
	if err := setupFlags(*table, spec); err != nil {
		fmt.Fprintf(stderr, "setup: %v; nothing was created\n", err)
		return 2
	}
	if os.Getenv("AWS_ENDPOINT_URL") == "" {
		fmt.Fprintln(stderr, "setup: AWS_ENDPOINT_URL is not set; setup is for local emulators (in AWS, deploy template.yaml).\nStart MiniStack (make emulator) and export AWS_ENDPOINT_URL=http://localhost:4566")
		return 2
	}
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		return cli.Fail(stderr, "setup", 1, err)
	}
	if err := ledger.CreateTable(ctx, dynamodb.NewFromConfig(cfg), *table); err != nil {
		return cli.Fail(stderr, "setup", 1, err)
	}
	q, dlq, err := queue.CreateQueues(ctx, sqs.NewFromConfig(cfg), spec)
	if err != nil {
		return cli.Fail(stderr, "setup", 1, err)
	}
	fmt.Fprintf(stdout, "export HOOKLEDGER_TABLE=%s\nexport HOOKLEDGER_QUEUE_URL=%s\nexport HOOKLEDGER_DLQ_URL=%s\n", *table, q, dlq)
	return 0
}

// setupFlags checks the flags before anything is created, so a bad one cannot
// leave a table without its queues; unlike queue.CreateQueues, it refuses zeros.
func setupFlags(table string, spec queue.QueueSpec) error {
	switch {
	case !validTableName(table):
		return fmt.Errorf("--table %q: want a DynamoDB table name, 3 to 255 letters, digits, '_', '-' or '.' (e.g. --table hookledger)", table)
	case !queue.ValidQueueName(spec.Name):
		return fmt.Errorf("--queue %q: want an SQS queue name, 1 to %d letters, digits, '-' or '_' (its DLQ is NAME-dlq; e.g. --queue hookledger)", spec.Name, queue.MaxQueueNameLen)
	case spec.VisibilityTimeout < 1 || spec.VisibilityTimeout > queue.MaxVisibilityTimeout:
		return fmt.Errorf("--visibility %d: want 1 to %d seconds (SQS's maximum), at least 6x the processor timeout (180 for dev's default --function-timeout 30s)", spec.VisibilityTimeout, queue.MaxVisibilityTimeout)
	case spec.MaxReceiveCount < 1 || spec.MaxReceiveCount > queue.MaxMaxReceiveCount:
		return fmt.Errorf("--max-receives %d: want 1 to %d deliveries before a message moves to the DLQ (default %d)", spec.MaxReceiveCount, queue.MaxMaxReceiveCount, queue.DefaultMaxReceiveCount)
	}
	return nil
}

// validTableName reports whether DynamoDB accepts name as a table name.
func validTableName(name string) bool {
	if len(name) < 3 || len(name) > 255 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// awsHint says how to reach the ledger when err looks like missing credentials or endpoint, else "".
func awsHint(err error, getenv func(string) string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	creds := strings.Contains(msg, "get credentials") || strings.Contains(msg, "retrieve credentials") ||
		strings.Contains(msg, "IMDS") || strings.Contains(msg, "NoCredentialProviders") ||
		strings.Contains(msg, "UnrecognizedClientException") || strings.Contains(msg, "InvalidClientTokenId")
	unreachable := strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") ||
		strings.Contains(msg, "dial tcp")
	switch ep := getenv("AWS_ENDPOINT_URL"); {
	case ep == "" && (creds || unreachable):
		return "hint: AWS_ENDPOINT_URL is not set and no AWS credentials were found. For the local emulator, start it (make emulator) and export AWS_ENDPOINT_URL=http://localhost:4566; for a deployed table, set AWS credentials (AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and AWS_REGION.\n"
	case ep != "" && unreachable:
		return fmt.Sprintf("hint: nothing answers at AWS_ENDPOINT_URL=%s: start the emulator (make emulator), or unset AWS_ENDPOINT_URL to use AWS.\n", ep)
	case creds:
		return "hint: check the AWS credentials (AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or set AWS_ENDPOINT_URL for the local emulator.\n"
	}
	return ""
}
