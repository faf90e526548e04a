package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/ledger"
)

const orderUsage = "usage: hookledger order show|reset --source S --tenant T [--yes] RESOURCE\n\n"

const orderHelp = `An InOrder route keeps, per (source, tenant, resource), the newest position
an event of the resource took, and which event took it; older events are
stale. show prints that order item; reset forgets it, so the resource's
next event takes it as its first.

Reset when a wrong position holds the resource: a broken producer's
sequence number, or a time position taken before hookledger refused those
more than 5 minutes after their arrival. Events it made stale stay done
(skipped); the next event brings the current state. reset needs --yes, and
refuses while the holding event's run may still be applying it.

  hookledger order show --source stripe --tenant acme sub_123
  hookledger order reset --source stripe --tenant acme --yes sub_123
`

func runOrder(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	q, code := parseOrder(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	cmd, src, tenant, res := q.cmd, q.src, q.tenant, q.resource
	l, _, ok := openLedgerAndStore(ctx, stderr, cmd)
	if !ok || q.sub == "reset" && !useFormat(ctx, l, stderr, cmd) {
		return 1
	}
	var o ledger.Order
	var err error
	if q.sub == "show" {
		o, err = l.GetOrder(ctx, src, tenant, res)
	} else {
		o, err = l.ResetOrder(ctx, src, tenant, res)
	}
	var oe *ledger.OrderError
	switch {
	case errors.Is(err, ledger.ErrInvalid):
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return 2
	case errors.Is(err, ledger.ErrNotFound):
		fmt.Fprintf(stderr, "%s: no event of %s/%s/%s took a position in table %s (none did, or it expired)\n", cmd, src, tenant, res, l.Table())
		return 1
	case errors.As(err, &oe) && oe.Holder != nil:
		fmt.Fprintf(stderr, "%s: event %s (%s) may still be applying its position to %s, until %s; try again after that\n",
			cmd, oe.Order.Holder, oe.Holder.Status, res, oe.Holder.LeaseUntil.Format(time.RFC3339))
		return 1
	case errors.As(err, &oe):
		fmt.Fprintf(stderr, "%s: another event took %s meanwhile; look again with hookledger order show\n", cmd, res)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n%s", cmd, err, awsHint(err, os.Getenv))
		return 1
	}
	out := map[string]any{
		"source": o.Source, "tenant": o.Tenant, "resource": o.Resource, "position": o.Position,
		// The built-in OrderFuncs' positions are times, in Unix nanoseconds.
		"position_as_time": time.Unix(0, o.Position).UTC().Format(time.RFC3339Nano),
		"event_id":         o.Holder, "expires_at": o.ExpiresAt,
	}
	if q.sub == "reset" {
		out["reset"] = "forgotten: the resource's next event takes it as its first"
	} else if rec, err := l.Get(ctx, ledger.Key{Source: o.Source, Tenant: o.Tenant, ID: o.Holder}); err == nil {
		out["event_status"] = rec.Status
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.Encode(out)
	return 0
}

// orderQuery is what hookledger order was asked: show or reset, and what.
type orderQuery struct {
	sub, cmd              string
	src, tenant, resource string
}

// parseOrder reads order's subcommand and flags; code >= 0 means exit.
func parseOrder(args []string, stdout, stderr io.Writer) (q orderQuery, code int) {
	if len(args) == 0 {
		fmt.Fprint(stderr, orderUsage+orderHelp)
		return q, 2
	}
	q.sub = args[0]
	switch q.sub {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, orderUsage+orderHelp)
		return q, 0
	case "show", "reset":
	default:
		fmt.Fprintf(stderr, "order: unknown subcommand %q; want show or reset (hookledger order --help)\n", q.sub)
		return q, 2
	}
	cmd := "order " + q.sub
	q.cmd = cmd
	synopsis := cmd + " --source S --tenant T RESOURCE"
	if q.sub == "reset" {
		synopsis = cmd + " --source S --tenant T --yes RESOURCE"
	}
	fs := cli.NewFlags("hookledger", cmd, synopsis, stderr)
	fs.StringVar(&q.src, "source", "", "the resource's source, the {source} of its webhook URL (required)")
	fs.StringVar(&q.tenant, "tenant", "", "the resource's tenant, the {tenant} of its webhook URL (required)")
	yes := false
	if q.sub == "reset" {
		fs.BoolVar(&yes, "yes", false, "forget the resource's position (check it first with hookledger order show)")
	}
	flags := fs.Usage
	fs.Usage = func() {
		flags()
		fmt.Fprint(fs.Output(), "\n"+orderHelp)
	}
	if code := cli.Parse(fs, args[1:], stdout); code >= 0 {
		return q, code
	}
	switch {
	case fs.NArg() != 1:
		fmt.Fprintf(stderr, "%s: give exactly one RESOURCE after the flags, e.g. hookledger %s --source stripe --tenant acme sub_123\n", cmd, cmd)
		return q, 2
	case q.src == "" || q.tenant == "":
		fmt.Fprintf(stderr, "%s: give --source and --tenant: a resource's order is kept per source and tenant\n", cmd)
		return q, 2
	case q.sub == "reset" && !yes:
		fmt.Fprintf(stderr, "%s: add --yes to forget the position of %s (hookledger order show prints it first); nothing was changed\n", cmd, fs.Arg(0))
		return q, 2
	}
	q.resource = fs.Arg(0)
	return q, -1
}
