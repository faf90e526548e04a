// Package browser drives hookledger console in headless Chromium against
// the emulator: the pages an operator uses, a replay through its
// confirmation, and markup from a sender's id, type and body never
// running. It saves screenshots of the list and of a timeline; the
// README's come from HOOKLEDGER_SCREENSHOTS=$PWD/docs go test ./lab/browser/.
package browser

import (
	"bufio"
	"context"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"
	"github.com/hookledger/hookledger/internal/awstest"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/fakeclock"
	"github.com/hookledger/hookledger/internal/queue"
	"github.com/hookledger/hookledger/ledger"
)

// chromium finds the browser scripts/tools.sh installs, or skips (fails
// under make test, which installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("HOOKLEDGER_REQUIRE_EMULATOR") == "1" {
		t.Fatal("no Chromium on PATH: run scripts/tools.sh, which installs it from the distribution's packages (apt-get install chromium)")
	}
	t.Skip("browser test: no Chromium on PATH; run scripts/tools.sh to install it")
	return ""
}

// console builds hookledger, starts its console on a free port over the
// emulator's table and queues, and returns its URL.
func console(t *testing.T, env []string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hookledger")
	build := exec.Command("go", "build", "-o", bin, "github.com/hookledger/hookledger/cmd/hookledger")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build hookledger: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "console", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("console printed no address: %v", err)
	}
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`).FindString(line)
	if url == "" {
		t.Fatalf("console said %q, want its address", line)
	}
	return url
}

// browse starts headless Chromium with a fresh profile and no background
// traffic, at a modest window size for the screenshots.
func browse(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 760),
	}
	alloc, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	return ctx
}

// screenshots is where the test saves them: HOOKLEDGER_SCREENSHOTS (the
// docs/ folder, to update the README's) or a temporary folder.
func screenshots(t *testing.T) string {
	if dir := os.Getenv("HOOKLEDGER_SCREENSHOTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}

func TestConsoleInABrowser(t *testing.T) {
	cfg := awstest.Config(t)
	db := dynamodb.NewFromConfig(cfg)
	table := awstest.Table(t, cfg)
	qurl, dlq := awstest.Queues(t, cfg, queue.QueueSpec{})
	clock := fakeclock.New(time.Now())
	l, err := ledger.New(db, ledger.Options{Table: table, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	(&seeder{t: t, l: l, clock: clock}).seed()
	base := console(t, []string{"AWS_ENDPOINT_URL=" + awstest.Endpoint(t), "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_PROFILE=",
		"HOOKLEDGER_TABLE=" + table, "HOOKLEDGER_QUEUE_URL=" + qurl, "HOOKLEDGER_DLQ_URL=" + dlq, "HOOKLEDGER_PAYLOAD_BUCKET="})
	ctx := browse(t)
	shots := screenshots(t)
	page := &page{t: t, ctx: ctx}

	// The list, newest first, every seeded event on it.
	page.run(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("table.events")))
	list := page.text("table.events")
	for _, id := range []ledger.Key{doneEvent, recoveredEvent, crashedEvent, deadEvent, hostileID, hostileType} {
		if !strings.Contains(list, id.ID) {
			t.Errorf("the list lacks %s:\n%s", id, list)
		}
	}
	page.noScriptRan("the list")
	page.pages(base)
	page.run(chromedp.Navigate(base+"/?tenant=acme"), chromedp.WaitVisible(chromedp.CSS("table.events")))
	page.screenshot(filepath.Join(shots, "console-list.png"))

	// Found by id, the crashed event's timeline shows the step it died in.
	page.run(chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#find")),
		chromedp.SetValue(chromedp.CSS(`#find input[name=source]`), crashedEvent.Source), chromedp.SetValue(chromedp.CSS(`#find input[name=tenant]`), crashedEvent.Tenant),
		chromedp.SetValue(chromedp.CSS(`#find-id`), crashedEvent.ID), chromedp.Submit(chromedp.CSS(`#find-id`)), chromedp.WaitVisible(chromedp.CSS("#steps")))
	steps := page.text("#steps")
	if key := engine.DownstreamKey(crashedEvent.Source, crashedEvent.Tenant, crashedEvent.ID, "charge"); !strings.Contains(steps, "charge") ||
		!strings.Contains(steps, "started") || !strings.Contains(steps, key) || !strings.Contains(steps, "the run died in this step") {
		t.Errorf("the crashed event's steps: want charge started, its downstream key %s and where the run died:\n%s", key, steps)
	}
	if tl := page.text("ol.timeline"); !strings.Contains(tl, "Run: no answer") || !strings.Contains(tl, "Leased until") {
		t.Errorf("the crashed event's timeline: want a run with no answer and the lease's end:\n%s", tl)
	}

	// A recovered event's story: a run that died, the reclaimer, a check.
	page.run(chromedp.Navigate(base+eventPath(recoveredEvent)), chromedp.WaitVisible(chromedp.CSS("ol.timeline")))
	tl := page.text("ol.timeline")
	for _, want := range []string{"Received", "in the queue until its first run", "Run: interrupted", "Run: done", "a step's check answered", "on its check's word", "Done"} {
		if !strings.Contains(tl, want) {
			t.Errorf("the recovered event's timeline lacks %q:\n%s", want, tl)
		}
	}
	page.screenshot(filepath.Join(shots, "console-event.png"))

	// The dead event, replayed through the confirmation.
	page.run(chromedp.Navigate(base+eventPath(deadEvent)), chromedp.WaitVisible(chromedp.CSS("#replay")), chromedp.Click(chromedp.CSS("#replay")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if dry := page.text("#dry-run"); !strings.Contains(dry, "would replay "+deadEvent.String()) {
		t.Errorf("the confirmation's dry run: %q", dry)
	}
	if rec, _ := l.Get(t.Context(), deadEvent); rec.Status != ledger.Dead {
		t.Fatalf("the confirmation page changed the record: %s", rec.Status)
	}
	page.run(chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#output")))
	if out := page.text("#output"); !strings.Contains(out, "replayed "+deadEvent.String()) {
		t.Errorf("the replay's output: %q", out)
	}
	rec, err := l.Get(t.Context(), deadEvent)
	if err != nil || rec.Status != ledger.Received || rec.ReplayedAt.IsZero() {
		t.Errorf("after the replay the record is %s (replayed at %v, %v), want received", rec.Status, rec.ReplayedAt, err)
	}
	if msgs := awstest.Drain(t, sqs.NewFromConfig(cfg), qurl); len(msgs) != 1 || !strings.Contains(msgs[0], deadEvent.ID) {
		t.Errorf("after the replay the queue holds %d messages, want the event's one", len(msgs))
	}

	// Markup in an id, a type, a body and an error is shown, not run.
	for _, id := range []ledger.Key{hostileID, hostileType} {
		page.run(chromedp.Navigate(base+eventPath(id)+"&body=1"), chromedp.WaitVisible(chromedp.CSS("#body-text")))
		if got := page.text("h1 .id"); got != id.ID {
			t.Errorf("the page shows the id as %q, want the text %q", got, id.ID)
		}
		if body := page.text("#body-text"); !strings.Contains(body, scriptTag) {
			t.Errorf("the body shows as %q, want its text", body)
		}
		page.noScriptRan("the event " + id.String())
	}
	page.run(chromedp.Navigate(base+"/attention"), chromedp.WaitVisible(chromedp.CSS("table.events")))
	if !strings.Contains(page.text("table.events"), imgTag) {
		t.Error("the attention page does not show the hostile cause as text")
	}
	page.noScriptRan("the attention page")
	page.crossSitePost(base, hostileID, l)
	t.Logf("screenshots in %s", shots)
}

// pages follows the list's next page link through one tenant's events:
// each page holds at most a page's worth, none twice, all of them in the end.
func (p *page) pages(base string) {
	p.t.Helper()
	p.run(chromedp.Navigate(base+"/?tenant="+bulkTenant), chromedp.WaitVisible(chromedp.CSS("table.events")))
	seen := map[string]bool{}
	for n := 1; ; n++ {
		ids := get(p, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("table.events td.id a"), a => a.textContent)`))
		if len(ids) == 0 || len(ids) > ledger.DefaultFindLimit {
			p.t.Fatalf("page %d of tenant %s lists %d events, want 1 to %d", n, bulkTenant, len(ids), ledger.DefaultFindLimit)
		}
		for _, id := range ids {
			if seen[id] {
				p.t.Errorf("page %d lists %s again", n, id)
			}
			seen[id] = true
		}
		next := get(p, chromedp.Evaluate[string](`document.getElementById("next")?.href ?? ""`))
		if next == "" {
			break
		}
		if n == 3 {
			p.t.Fatalf("more than %d pages for %d events", n, bulkEvents)
		}
		p.run(chromedp.Navigate(next), chromedp.WaitVisible(chromedp.CSS("table.events")))
	}
	if len(seen) != bulkEvents {
		p.t.Errorf("the pages of tenant %s list %d events, want %d", bulkTenant, len(seen), bulkEvents)
	}
}

// crossSitePost posts, from a page on another site, the very form the
// console's confirmation holds for replaying id, its token included: the
// console refuses it and the record stays dead.
func (p *page) crossSitePost(base string, id ledger.Key, l *ledger.Ledger) {
	p.t.Helper()
	p.run(chromedp.Navigate(base+"/confirm?"+url.Values{"action": {"replay"}, "source": {id.Source}, "tenant": {id.Tenant}, "id": {id.ID}}.Encode()),
		chromedp.WaitVisible(chromedp.CSS("#confirm")))
	fields := get(p, chromedp.Evaluate[map[string]string](`Object.fromEntries(new FormData(document.querySelector('form[action="/act"]')))`))
	if fields["token"] == "" || fields["id"] != id.ID {
		p.t.Fatalf("the confirmation's form: %v", fields)
	}
	attack := template.Must(template.New("").Parse(`<!doctype html><form method="post" action="{{.Action}}">
{{range $k, $v := .Fields}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}<button id="go">Win a prize</button></form>`))
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attack.Execute(w, map[string]any{"Action": base + "/act", "Fields": fields})
	}))
	p.t.Cleanup(site.Close)
	// localhost is another site than 127.0.0.1, where the console listens.
	other := strings.Replace(site.URL, "127.0.0.1", "localhost", 1)
	p.run(chromedp.Navigate(other), chromedp.WaitVisible(chromedp.CSS("#go")), chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitNotPresent(chromedp.CSS("#go")), chromedp.WaitVisible(chromedp.CSS("body")))
	loc := get(p, chromedp.Location())
	if got := p.text("body"); !strings.HasPrefix(loc, base+"/act") || !strings.Contains(got, "cross-origin request") {
		p.t.Errorf("a cross-site post of the replay form: at %s the page says %q, want the console's refusal", loc, got)
	}
	if rec, err := l.Get(p.t.Context(), id); err != nil || rec.Status != ledger.Dead {
		p.t.Errorf("after a cross-site post the record is %s (%v), want dead", rec.Status, err)
	}
}

func eventPath(id ledger.Key) string {
	return "/event?" + url.Values{"source": {id.Source}, "tenant": {id.Tenant}, "id": {id.ID}}.Encode()
}

// page is one browser tab under test.
type page struct {
	t       *testing.T
	ctx     context.Context
	started bool // the first action started the browser
}

// actionTimeout bounds one step in the browser.
const actionTimeout = time.Minute

// ctxFor is the context of one action: the tab's for the first, which
// starts the browser (a deadline on it would stop the browser), then one
// with a deadline.
func (p *page) ctxFor() (context.Context, context.CancelFunc) {
	if !p.started {
		p.started = true
		return p.ctx, func() {}
	}
	return context.WithTimeout(p.ctx, actionTimeout)
}

func (p *page) run(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := p.ctxFor()
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

func get[T any](p *page, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := p.ctxFor()
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.t.Fatalf("browser: %v", err)
	}
	return v
}

func (p *page) text(sel string) string {
	p.t.Helper()
	return get(p, chromedp.Text(chromedp.CSS(sel)))
}

// noScriptRan fails when markup from the ledger ran: the hostile events
// set window.pwned if their script or onerror handler ever executes.
func (p *page) noScriptRan(where string) {
	p.t.Helper()
	if get(p, chromedp.Evaluate[bool](`window.pwned !== undefined`)) {
		p.t.Errorf("%s ran a script from the ledger", where)
	}
}

func (p *page) screenshot(path string) {
	p.t.Helper()
	if err := os.WriteFile(path, get(p, chromedp.CaptureScreenshot()), 0o644); err != nil {
		p.t.Fatal(err)
	}
}
