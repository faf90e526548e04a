package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/hookledger/hookledger/internal/cli"
)

const reindexHelp = `Puts into this release's indexes the records an earlier release wrote
without them, so that list, replay --status and the console find them. Run it
once after upgrading from 0.1.0: it scans the table (one read of every item)
and writes each dead record that is not in the dead index once. Running it
again finds nothing more to do.

  hookledger reindex --dry-run   # count them
  hookledger reindex
`

func runReindex(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "reindex", "reindex [--dry-run]", stderr)
	dry := fs.Bool("dry-run", false, "count the records to index; write nothing")
	synopsis := fs.Usage
	fs.Usage = func() {
		synopsis()
		fmt.Fprint(fs.Output(), "\n"+reindexHelp)
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "reindex: unexpected argument %q; reindex takes only --dry-run\n", fs.Arg(0))
		return 2
	}
	l, _, ok := openLedgerAndStore(ctx, stderr, "reindex")
	if !ok || !*dry && !useFormat(ctx, l, stderr, "reindex") {
		return 1
	}
	found, indexed, err := l.IndexDead(ctx, *dry)
	if err != nil {
		fmt.Fprintf(stderr, "reindex: %v (indexed %d of %d found so far; run it again to go on)\n%s", err, indexed, found, awsHint(err, os.Getenv))
		return 1
	}
	if *dry {
		fmt.Fprintf(stdout, "table %s: %d dead records outside the dead index (--dry-run: none written)\n", l.Table(), found)
		return 0
	}
	fmt.Fprintf(stdout, "table %s: %d dead records put into the dead index", l.Table(), indexed)
	if left := found - indexed; left > 0 {
		fmt.Fprintf(stdout, " (%d replayed meanwhile, left alone)", left)
	}
	fmt.Fprintln(stdout)
	return 0
}
