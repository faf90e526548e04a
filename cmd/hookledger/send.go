package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hookledger/hookledger/internal/cli"
	"github.com/hookledger/hookledger/webhook"
)

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code := parseSend(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	d, code := o.delivery(stderr)
	if code >= 0 {
		return code
	}
	o.announce(d, stdout, stderr)
	return o.report(d.post(ctx, o.repeat, o.conc), stdout, stderr)
}

// sendOpts is what hookledger send was asked to do.
type sendOpts struct {
	provider, secret, src, tenant, base, target string
	body, bodyFile, id, typ                     string
	repeat, conc                                int
}

// parseSend reads send's flags; code >= 0 means exit with it.
func parseSend(args []string, stdout, stderr io.Writer) (o sendOpts, code int) {
	fs := cli.NewFlags("hookledger", "send", "send --secret S [--provider stripe] [--source PROVIDER --tenant acme | --url URL] [--body JSON | --body-file F] [--repeat N] [--concurrency C]", stderr)
	fs.StringVar(&o.provider, "provider", "stripe", "signing scheme: "+fmt.Sprint(webhook.Providers()))
	fs.StringVar(&o.secret, "secret", "", "the tenant's signing secret (required)")
	fs.StringVar(&o.src, "source", "", "source name in the URL (default: the --provider's name)")
	fs.StringVar(&o.tenant, "tenant", "acme", "tenant name in the URL")
	fs.StringVar(&o.base, "base", "http://127.0.0.1:8080", "receiver base URL (hookledger dev's address, or the deployed API)")
	fs.StringVar(&o.target, "url", "", "full target URL (overrides --base, --source, --tenant)")
	fs.StringVar(&o.body, "body", "", "request body (default: a minimal sample event of --provider's with a fresh id: stripe invoice.paid, github push, gitlab Push Hook, shopify orders/create, ...; twilio and generic get the Stripe sample: pass --body and --type for a real event)")
	fs.StringVar(&o.bodyFile, "body-file", "", "read the body from this file")
	fs.StringVar(&o.id, "id", "", "event/delivery id for schemes that send it in a header (default: random)")
	fs.StringVar(&o.typ, "type", "", "event type for schemes that send it in a header (default: the sample's, e.g. push for github, orders/create for shopify)")
	fs.IntVar(&o.repeat, "repeat", 1, "send the same signed delivery this many times in sequence")
	fs.IntVar(&o.conc, "concurrency", 1, "and this many at once each time (duplicates racing)")
	if code := cli.Parse(fs, args, stdout); code >= 0 {
		return o, code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "send: unexpected argument %q; give the body with --body or --body-file\n", fs.Arg(0))
		return o, 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["source"] {
		o.src = o.provider
	}
	if o.target == "" && (o.src == "" || o.tenant == "") {
		fmt.Fprintln(stderr, "send: --source and --tenant must not be empty: they name the URL's /webhooks/{source}/{tenant} (or give the whole --url)")
		return o, 2
	}
	if o.secret == "" {
		fmt.Fprintln(stderr, "send: --secret is required (the tenant's secret from your sources config)")
		return o, 2
	}
	if o.repeat < 1 || o.conc < 1 || o.conc > 1000 {
		fmt.Fprintln(stderr, "send: --repeat must be >= 1 and --concurrency between 1 and 1000")
		return o, 2
	}
	return o, -1
}

// signed is one signed delivery, ready to post.
type signed struct {
	v       *webhook.Verifier
	url     string
	hdr     http.Header
	payload []byte
}

// delivery builds and signs the delivery; code >= 0 means exit with it.
func (o *sendOpts) delivery(stderr io.Writer) (d signed, code int) {
	v, err := webhook.New(webhook.Config{Provider: o.provider})
	if err != nil {
		fmt.Fprintf(stderr, "send: %v\n", err)
		return d, 2
	}
	payload := []byte(o.body)
	switch {
	case o.body != "" && o.bodyFile != "":
		fmt.Fprintln(stderr, "send: give --body or --body-file, not both")
		return d, 2
	case o.bodyFile != "":
		if payload, err = os.ReadFile(o.bodyFile); err != nil {
			fmt.Fprintf(stderr, "send: %v\n", err)
			return d, 2
		}
	}
	sampleBody, sampleType := sampleEvent(o.provider, time.Now())
	if o.body == "" && o.bodyFile == "" {
		payload = sampleBody
	}
	o.typ = cmp.Or(o.typ, sampleType)
	o.id = cmp.Or(o.id, "msg_"+cli.RandomHex(12))
	u := cmp.Or(o.target, o.base+"/webhooks/"+o.src+"/"+o.tenant)
	hdr, err := v.Sign(webhook.Message{ID: o.id, Type: o.typ, Body: payload, URL: u, Now: time.Now()}, o.secret)
	if err != nil {
		fmt.Fprintf(stderr, "send: sign: %v\n", err)
		return d, 2
	}
	return signed{v: v, url: u, hdr: hdr, payload: payload}, -1
}

// announce says what is sent, with the key the receiver will find, for hookledger inspect.
func (o *sendOpts) announce(d signed, stdout, stderr io.Writer) {
	where := ""
	if o.target == "" {
		where = o.src + "/" + o.tenant
	} else if s, t, ok := sourceTenant(d.url); ok {
		o.src, o.tenant, where = s, t, s+"/"+t
	}
	ev, err := d.v.Verify(&webhook.Request{Method: http.MethodPost, URL: d.url, Header: d.hdr.Clone(), Body: d.payload}, []string{o.secret}, time.Now())
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "send: warning: by %s's defaults the receiver finds no idempotency key in this delivery: %v\n", o.provider, err)
	case ev.Handshake != nil:
		fmt.Fprintf(stdout, "sending a %s handshake to %s\n", o.provider, d.url)
	case where != "":
		fmt.Fprintf(stdout, "sending %s key %s (type %q); inspect it with: hookledger inspect --source %s --tenant %s %s\n", where, ev.ID, ev.Type, o.src, o.tenant, ev.ID)
	default:
		fmt.Fprintf(stdout, "sending key %s (type %q) to %s\n", ev.ID, ev.Type, d.url)
	}
}

// post sends the delivery repeat times, conc at once, and counts answers.
func (d signed) post(ctx context.Context, repeat, conc int) map[string]int {
	client := &http.Client{Timeout: 30 * time.Second, Transport: cli.LocalhostTransport()}
	counts := map[string]int{}
	var mu sync.Mutex
	for range repeat {
		var wg sync.WaitGroup
		for range conc {
			wg.Go(func() {
				status, result, err := cli.Post(ctx, client, d.url, d.hdr, d.payload)
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
	return counts
}

// report prints the answers' counts and hints; it returns 1 if any answer was not 2xx.
func (o *sendOpts) report(counts map[string]int, stdout, stderr io.Writer) int {
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
	for _, k := range keys {
		switch k {
		case "401 rejected_signature":
			fmt.Fprintln(stderr, "send: 401 rejected_signature: check that --secret is the tenant's signing secret in HOOKLEDGER_SOURCES (the receiver's log has the reason)")
		case "404 rejected_unknown":
			fmt.Fprintf(stderr, "send: 404 rejected_unknown: source %q or tenant %q not in HOOKLEDGER_SOURCES\n", o.src, o.tenant)
		}
	}
	if failed {
		return 1
	}
	return 0
}

// sourceTenant returns the {source} and {tenant} of a .../webhooks/ URL.
func sourceTenant(u string) (string, string, bool) {
	p, err := url.Parse(u)
	if err != nil {
		return "", "", false
	}
	parts := strings.Split(strings.Trim(p.Path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "webhooks" && parts[i+1] != "" && parts[i+2] != "" {
			return parts[i+1], parts[i+2], true
		}
	}
	return "", "", false
}

// sampleEvent returns send's default body and type for provider: a minimal
// event with a fresh id that the provider's defaults key. Twilio and
// generic get the Stripe sample.
func sampleEvent(provider string, now time.Time) ([]byte, string) {
	id := cli.RandomHex(12)
	ms := now.UnixMilli()
	switch provider {
	case "github":
		return fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%s","repository":{"full_name":"acme/app"}}`, cli.RandomHex(40)), "push"
	case "gitlab":
		return fmt.Appendf(nil, `{"object_kind":"push","ref":"refs/heads/main","checkout_sha":"%s","project":{"path_with_namespace":"acme/app"}}`, cli.RandomHex(40)), "Push Hook"
	case "shopify":
		return shopifyOrder(1_000_000+now.UnixNano()%1_000_000_000, now), "orders/create"
	case "paddle":
		return fmt.Appendf(nil, `{"event_id":"evt_%s","event_type":"transaction.completed","occurred_at":%q,"data":{"id":"txn_%s"}}`, id, now.UTC().Format(time.RFC3339), id), "transaction.completed"
	case "square":
		return fmt.Appendf(nil, `{"merchant_id":"M_%s","type":"payment.updated","event_id":"%s","created_at":%q,"data":{"type":"payment","id":"%s"}}`, id, id, now.UTC().Format(time.RFC3339), id), "payment.updated"
	case "intercom":
		return fmt.Appendf(nil, `{"type":"notification_event","id":"notif_%s","topic":"conversation.user.created","created_at":%d,"data":{"item":{"type":"conversation","id":"%s"}}}`, id, now.Unix(), id), "conversation.user.created"
	case "slack":
		return fmt.Appendf(nil, `{"type":"event_callback","event_id":"Ev%s","event_time":%d,"event":{"type":"app_mention","text":"hello"}}`, id, now.Unix()), "event_callback"
	case "linear":
		return fmt.Appendf(nil, `{"action":"create","type":"Issue","webhookTimestamp":%d,"data":{"id":"%s"}}`, ms, id), "Issue"
	case "zoom":
		return fmt.Appendf(nil, `{"event":"meeting.started","event_ts":%d,"payload":{"object":{"id":"%s"}}}`, ms, id), "meeting.started"
	case "twitch":
		return fmt.Appendf(nil, `{"subscription":{"type":"channel.follow"},"event":{"user_id":"%s"}}`, id), "channel.follow"
	}
	return cli.SampleInvoice("evt_"+id, 4900), "invoice.paid"
}

// shopifyOrder is an orders/create body, cut to what an effect reads: the
// customer, totals, and line items (two T-shirts at 19.00, a mug at 11.00).
func shopifyOrder(id int64, now time.Time) []byte {
	at := now.Format(time.RFC3339)
	return fmt.Appendf(nil, `{"id":%[1]d,"admin_graphql_api_id":"gid://shopify/Order/%[1]d","name":"#%[2]d","email":"ada@example.com",`+
		`"created_at":%[3]q,"updated_at":%[3]q,"currency":"USD","financial_status":"paid","subtotal_price":"49.00","total_price":"49.00",`+
		`"customer":{"id":7001,"email":"ada@example.com","first_name":"Ada"},"line_items":[`+
		`{"id":%[4]d,"admin_graphql_api_id":"gid://shopify/LineItem/%[4]d","product_id":632910392,"variant_id":808950810,"sku":"TEE-M-BLK","title":"T-shirt","variant_title":"M / Black","quantity":2,"price":"19.00"},`+
		`{"id":%[5]d,"admin_graphql_api_id":"gid://shopify/LineItem/%[5]d","product_id":632910393,"variant_id":808950811,"sku":"MUG-WHT","title":"Mug","variant_title":null,"quantity":1,"price":"11.00"}]}`,
		id, 1000+id%9000, at, id*10+1, id*10+2)
}
