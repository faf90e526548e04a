package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/hookledger/hookledger/internal/cli"

	"github.com/hookledger/hookledger/webhook"
)

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("hookledger", "send", "send --secret S [--provider stripe] [--source PROVIDER --tenant acme | --url URL] [--body JSON | --body-file F] [--repeat N] [--concurrency C]", stderr)
	provider := fs.String("provider", "stripe", "signing scheme: "+fmt.Sprint(webhook.Providers()))
	secret := fs.String("secret", "", "the tenant's signing secret (required)")
	src := fs.String("source", "", "source name in the URL (default: the --provider's name)")
	tenant := fs.String("tenant", "acme", "tenant name in the URL")
	base := fs.String("base", "http://127.0.0.1:8080", "receiver base URL (hookledger dev's address, or the deployed API)")
	target := fs.String("url", "", "full target URL (overrides --base, --source, --tenant)")
	body := fs.String("body", "", "request body (default: a sample invoice.paid event with a fresh id)")
	bodyFile := fs.String("body-file", "", "read the body from this file")
	id := fs.String("id", "", "event/delivery id for schemes that send it in a header (default: random)")
	typ := fs.String("type", "invoice.paid", "event type for schemes that send it in a header")
	repeat := fs.Int("repeat", 1, "send the same signed delivery this many times in sequence")
	conc := fs.Int("concurrency", 1, "and this many at once each time (duplicates racing)")
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "send: unexpected argument %q; give the body with --body or --body-file\n", fs.Arg(0))
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["source"] {
		*src = *provider
	}
	if *target == "" && (*src == "" || *tenant == "") {
		fmt.Fprintln(stderr, "send: --source and --tenant must not be empty: they name the URL's /webhooks/{source}/{tenant} (or give the whole --url)")
		return 2
	}
	if *secret == "" {
		fmt.Fprintln(stderr, "send: --secret is required (the tenant's secret from your sources config)")
		return 2
	}
	if *repeat < 1 || *conc < 1 || *conc > 1000 {
		fmt.Fprintln(stderr, "send: --repeat must be >= 1 and --concurrency between 1 and 1000")
		return 2
	}
	v, err := webhook.New(webhook.Config{Provider: *provider})
	if err != nil {
		fmt.Fprintf(stderr, "send: %v\n", err)
		return 2
	}
	payload := []byte(*body)
	switch {
	case *body != "" && *bodyFile != "":
		fmt.Fprintln(stderr, "send: give --body or --body-file, not both")
		return 2
	case *bodyFile != "":
		if payload, err = os.ReadFile(*bodyFile); err != nil {
			fmt.Fprintf(stderr, "send: %v\n", err)
			return 2
		}
	case *body == "":
		payload = cli.SampleInvoice("evt_"+cli.RandomHex(12), 4900)
	}
	u := *target
	if u == "" {
		u = *base + "/webhooks/" + *src + "/" + *tenant
	}
	if *id == "" {
		*id = "msg_" + cli.RandomHex(12)
	}
	hdr, err := v.Sign(webhook.Message{ID: *id, Type: *typ, Body: payload, URL: u, Now: time.Now()}, *secret)
	if err != nil {
		fmt.Fprintf(stderr, "send: sign: %v\n", err)
		return 2
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: cli.LocalhostTransport()}
	counts := map[string]int{}
	var mu sync.Mutex
	for range *repeat {
		var wg sync.WaitGroup
		for range *conc {
			wg.Go(func() {
				status, result, err := cli.Post(ctx, client, u, hdr, payload)
				key := fmt.Sprintf("%d %s", status, result)
				if err != nil {
					key = "error: " + err.Error()
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	failed := false
	for _, k := range keys {
		fmt.Fprintf(stdout, "%5d × %s\n", counts[k], k)
		if k[0] != '2' {
			failed = true
		}
	}
	if failed {
		return 1
	}
	return 0
}
