package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/internal/project"
	"github.com/hookledger/hookledger/ledger"
)

// localPortDefault is the port of the emulator hookledger local deploys
// into (HOOKLEDGER_LOCAL_PORT changes it).
const localPortDefault = 4588

// localDir is where scripts/local.sh leaves the build, stack.json (the
// deployed stack's outputs) and senders.json (the test signing secrets).
const localDir = ".aws-sam/local"

// localWaitDefault bounds the wait for the test events to be processed.
const localWaitDefault = 2 * time.Minute

// runLocal deploys the project into MiniStack with IAM enforced
// (scripts/local.sh of the engine at the project's version), sends a
// signed test event to every source and tenant, and shows the ledger.
func runLocal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "local", "local [--port P] [--send | --down]", stderr)
	port := fs.Int("port", localPortDefault, "the emulator's port (default: HOOKLEDGER_LOCAL_PORT, else "+strconv.Itoa(localPortDefault)+")")
	sendOnly := fs.Bool("send", false, "send the test events again to the stack deployed before, without deploying")
	down := fs.Bool("down", false, "delete the stack, and stop the emulator hookledger local started")
	wait := fs.Duration("wait", localWaitDefault, "how long to wait for the events to be processed")
	if v := os.Getenv("HOOKLEDGER_LOCAL_PORT"); v != "" {
		if err := fs.Set("port", v); err != nil {
			fmt.Fprintf(stderr, "local: HOOKLEDGER_LOCAL_PORT=%q: want a port number\n", v)
			return 2
		}
	}
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	err := cli.FirstError(cli.CheckInt(fs, "port", 1, 65535), cli.CheckDuration(fs, "wait"))
	switch {
	case err != nil:
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q; local takes only flags", fs.Arg(0))
	case *sendOnly && *down:
		err = fmt.Errorf("give --send or --down, not both")
	}
	if err != nil {
		fmt.Fprintf(stderr, "local: %v (hookledger local --help)\n", err)
		return 2
	}
	proj, engine, err := project.Locate(ctx, ".")
	if err != nil {
		fmt.Fprintf(stderr, "local: %v\n", err)
		return 1
	}
	if !*sendOnly {
		if !*down && proj.Path != project.Engine && !writeTemplate(proj, engine, stdout, stderr) {
			return 1
		}
		step := "up"
		if *down {
			step = "down"
		}
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(engine.Dir, "scripts", "local.sh"), step)
		cmd.Dir, cmd.Stdout, cmd.Stderr = proj.Dir, stderr, stderr
		cmd.Env = append(os.Environ(), "HOOKLEDGER_LOCAL_PORT="+strconv.Itoa(*port))
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(stderr, "local: scripts/local.sh %s: %v\n", step, err)
			return 1
		}
		if *down {
			return 0
		}
	}
	return sendLocal(ctx, filepath.Join(proj.Dir, localDir), *wait, stdout, stderr)
}

// localStack is what scripts/local.sh writes about the deployed stack.
type localStack struct {
	Stack    string            `json:"stack"`
	Endpoint string            `json:"endpoint"`
	Outputs  map[string]string `json:"outputs"`
}

// localSender is one source and tenant to send a test event to.
type localSender struct {
	Source, Tenant, Provider, Secret string
}

// sendLocal sends each sender's sample event twice (the second is a
// duplicate), waits until the new records leave received and processing,
// and lists the ledger. It fails when one did not end done.
func sendLocal(ctx context.Context, dir string, wait time.Duration, stdout, stderr io.Writer) int {
	var st localStack
	var senders []localSender
	for name, v := range map[string]any{"stack.json": &st, "senders.json": &senders} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			fmt.Fprintf(stderr, "local: %v; deploy first: hookledger local (make local)\n", err)
			return 1
		}
	}
	// Every AWS call from here on goes to the emulator, as its root user.
	os.Unsetenv("AWS_PROFILE")
	os.Unsetenv("AWS_SESSION_TOKEN")
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": st.Endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION": "us-east-1", "HOOKLEDGER_TABLE": st.Outputs["LedgerTableName"]} {
		os.Setenv(k, v)
	}
	start := time.Now().Add(-5 * time.Second) // the receiver's clock is this machine's
	sent := 0
	for _, s := range senders {
		u := strings.NewReplacer("{source}", s.Source, "{tenant}", s.Tenant).Replace(st.Outputs["WebhookUrl"])
		if runSend(ctx, []string{"--provider", s.Provider, "--secret", s.Secret, "--url", u, "--repeat", "2"}, stdout, stderr) != 0 {
			fmt.Fprintf(stderr, "local: %s/%s: the test event was not accepted; send your own with hookledger send --url %s\n", s.Source, s.Tenant, u)
			continue
		}
		sent++
	}
	l, _, ok := openLedgerAndStore(ctx, stderr, "local")
	if !ok {
		return 1
	}
	recs, err := settle(ctx, l, start, sent, wait)
	runList(ctx, nil, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "local: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nstack %s is up on %s. Inspect an event:\n  AWS_ENDPOINT_URL=%s AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 HOOKLEDGER_TABLE=%s hookledger inspect --source S --tenant T KEY\n"+
		"Send again: hookledger local --send. Stop: hookledger local --down.\n", st.Stack, st.Endpoint, st.Endpoint, st.Outputs["LedgerTableName"])
	for _, r := range recs {
		if r.Status != ledger.Done {
			fmt.Fprintf(stderr, "local: %s is %s: %s (hookledger inspect shows its record; MiniStack's log is under .ministack/)\n", r.ID, r.Status, r.LastError)
			return 1
		}
	}
	if sent < len(senders) {
		return 1
	}
	return 0
}

// settle polls the ledger until the records created since start are at
// least want and none is received or processing, or wait runs out.
func settle(ctx context.Context, l *ledger.Ledger, start time.Time, want int, wait time.Duration) ([]ledger.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		all, err := l.List(ctx, "", 0)
		var recs []ledger.Record
		busy := false
		for _, r := range all {
			if !r.CreatedAt.Before(start) {
				recs = append(recs, r)
				busy = busy || r.Status == ledger.Received || r.Status == ledger.Processing
			}
		}
		if err == nil && len(recs) >= want && !busy {
			return recs, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("after %s, %d of %d new records, some still received or processing", wait, len(recs), want)
			}
			return recs, err
		case <-tick.C:
		}
	}
}
