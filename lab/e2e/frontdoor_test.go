//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/hookledger/hookledger/internal/sdkconfig"
	"github.com/hookledger/hookledger/ledger"
	"github.com/hookledger/hookledger/webhook"
)

// door is one way into the deployed receiver.
type door struct {
	name string
	base string // where the test sends, on the emulator
	// public is the base URL as the stack's output names it, the URL a
	// sender posts to and signs on AWS ("": base).
	public string
}

// doors returns the HTTP API and the function URL of a FrontDoor=Both stack.
// The function URL's output is https://<id>.lambda-url.<region>.on.aws/...,
// which resolves nowhere here; MiniStack serves it on its own port by host
// name, so the test sends to http://<id>.lambda-url.<region>.localhost:PORT
// (localhostTransport dials *.localhost on the loopback) and the receiver
// sees the public host, as on AWS.
func (e *env) doors(t *testing.T) (api, furl door) {
	t.Helper()
	public := must(t, "HOOKLEDGER_E2E_FUNCTION_URL")
	u, err := url.Parse(strings.TrimSuffix(public, "/webhooks/{source}/{tenant}"))
	if err != nil || !strings.HasSuffix(u.Host, ".on.aws") || !strings.Contains(u.Host, ".lambda-url.") {
		t.Fatalf("HOOKLEDGER_E2E_FUNCTION_URL=%q is not a function URL output", public)
	}
	ep, err := url.Parse(must(t, "HOOKLEDGER_E2E_ENDPOINT"))
	if err != nil {
		t.Fatal(err)
	}
	local := "http://" + strings.TrimSuffix(u.Host, ".on.aws") + ".localhost:" + ep.Port()
	return door{name: "HTTP API", base: e.api}, door{name: "function URL", base: local, public: "https://" + u.Host}
}

// deliver sends m.Body to d's /webhooks/{source}/{tenant} with method,
// signed by v's scheme over the URL the sender would post to.
func (e *env) deliver(t *testing.T, d door, method string, v *webhook.Verifier, m webhook.Message, source, tenant, secret string) answer {
	t.Helper()
	path := "/webhooks/" + url.PathEscape(source) + "/" + url.PathEscape(tenant)
	public := d.public
	if public == "" {
		public = d.base
	}
	m.Now, m.URL = time.Now(), public+path
	h, err := v.Sign(m, secret)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, d.base+path, bytes.NewReader(m.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, d.base+path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Status string `json:"status"`
	}
	json.Unmarshal(raw, &out)
	return answer{code: resp.StatusCode, status: out.Status}
}

// charges reads the payments stub's charge and notification counts per event.
func (e *env) charges(t *testing.T) (charged, notified map[string]int) {
	t.Helper()
	resp, err := e.client.Get(must(t, "HOOKLEDGER_E2E_PAYMENTS_URL") + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		PerEvent map[string]int `json:"per_event"`
		Notified map[string]int `json:"notified_per_event"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.PerEvent, st.Notified
}

// TestFrontDoors drives the stack deployed with FrontDoor=Both through each
// front door: what each answers, that both write one ledger, what the
// processor makes of events from either, a provider that signs the URL, the
// per-source retention the receiver gives records, and a throttled receiver
// behind the function URL.
func TestFrontDoors(t *testing.T) {
	e := setup(t)
	api, furl := e.doors(t)
	sv := e.verifier

	t.Run("the function URL's resource policy", func(t *testing.T) {
		// Lambda refuses a public URL's requests without both statements;
		// MiniStack does not enforce them (lab/docs/emulator.md), so their
		// presence is checked here instead.
		statements := receiverPolicy(t)
		var urlInvoke, invokeViaURL, apiInvoke bool
		for _, st := range statements {
			cond, _ := json.Marshal(st.Condition)
			switch {
			case st.Action == "lambda:InvokeFunctionUrl" && st.Principal == "*" && strings.Contains(string(cond), `"lambda:FunctionUrlAuthType":"NONE"`):
				urlInvoke = true
			case st.Action == "lambda:InvokeFunction" && st.Principal == "*" && strings.Contains(string(cond), `"lambda:InvokedViaFunctionUrl":"true"`):
				invokeViaURL = true
			case st.Action == "lambda:InvokeFunction" && st.Principal == "*":
				t.Errorf("the receiver may be invoked by anyone, not only through its URL: %+v", st)
			case st.Action == "lambda:InvokeFunction" && strings.Contains(string(st.RawPrincipal), "apigateway.amazonaws.com"):
				apiInvoke = true
			}
		}
		if !urlInvoke || !invokeViaURL || !apiInvoke {
			t.Errorf("receiver policy: InvokeFunctionUrl(NONE)=%v InvokeFunction(via URL)=%v API Gateway=%v, want all three: %+v",
				urlInvoke, invokeViaURL, apiInvoke, statements)
		}
	})

	t.Run("rejections through the function URL touch nothing", func(t *testing.T) {
		key := "evt_e2e_furl_rejected_" + e.runID
		body := stripeEvent(key, "invoice.paid")
		for _, c := range []struct {
			name, method, source, tenant, secret string
			want                                 int
		}{
			{"bad signature", http.MethodPost, "stripe", "acme", "whsec_not_the_secret", http.StatusUnauthorized},
			{"unknown tenant", http.MethodPost, "stripe", "nobody", e.secret, http.StatusNotFound},
			{"unknown source", http.MethodPost, "nosuchsource", "acme", e.secret, http.StatusNotFound},
			{"GET", http.MethodGet, "stripe", "acme", e.secret, http.StatusMethodNotAllowed},
		} {
			if got := e.deliver(t, furl, c.method, sv, webhook.Message{Body: body}, c.source, c.tenant, c.secret); got.code != c.want {
				t.Errorf("%s: got %d, want %d", c.name, got.code, c.want)
			}
		}
		if _, err := e.ledger.Get(t.Context(), e.id(key)); err == nil {
			t.Error("a rejected request left a ledger record")
		}
	})

	// Each door takes a new event and answers its repeats, through either
	// door, as duplicates; the processor charges each once.
	keys := map[string]string{}
	for _, d := range []door{api, furl} {
		other := map[string]door{api.name: furl, furl.name: api}[d.name]
		key := "evt_e2e_door_" + strings.ReplaceAll(d.name, " ", "_") + "_" + e.runID
		keys[d.name] = key
		t.Run("new and duplicate through the "+d.name, func(t *testing.T) {
			m := webhook.Message{Body: stripeEvent(key, "invoice.paid")}
			if got := e.deliver(t, d, http.MethodPost, sv, m, "stripe", "acme", e.secret); got.code != http.StatusOK || got.status != "accepted" {
				t.Fatalf("new event: %+v, want 200 accepted", got)
			}
			for _, again := range []door{d, other} {
				if got := e.deliver(t, again, http.MethodPost, sv, m, "stripe", "acme", e.secret); got.code != http.StatusOK || got.status != "duplicate" {
					t.Errorf("again through the %s: %+v, want 200 duplicate", again.name, got)
				}
			}
		})
	}

	sqKey := "sq-e2e-" + e.runID
	t.Run("a provider that signs the URL, through the function URL", func(t *testing.T) {
		sq, err := webhook.New(webhook.Config{Provider: "square"})
		if err != nil {
			t.Fatal(err)
		}
		secret := must(t, "HOOKLEDGER_E2E_SECRET_SQUARE")
		m := webhook.Message{Body: []byte(`{"merchant_id":"ML1","type":"payment.updated","event_id":"` + sqKey + `","data":{"type":"payment","id":"p1"}}`)}
		if got := e.deliver(t, furl, http.MethodPost, sq, m, "square", "acme", secret); got.code != http.StatusOK || got.status != "accepted" {
			t.Errorf("square signed over the function URL: %+v, want 200 accepted", got)
		}
		// Signed over the API's URL instead: not what was posted to.
		wrong := door{name: furl.name, base: furl.base, public: api.base}
		m.Body = bytes.Replace(m.Body, []byte(sqKey), []byte(sqKey+"-wrong-url"), 1)
		if got := e.deliver(t, wrong, http.MethodPost, sq, m, "square", "acme", secret); got.code != http.StatusUnauthorized {
			t.Errorf("square signed over another URL: %+v, want 401", got)
		}
	})

	t.Run("events from both doors are processed once", func(t *testing.T) {
		ids := []ledger.Key{e.id(keys[api.name]), e.id(keys[furl.name]), {Source: "square", Tenant: "acme", ID: sqKey}}
		e.waitStatus(t, e.settle, ledger.Done, ids...)
		charged, notified := e.charges(t)
		for _, k := range []string{keys[api.name], keys[furl.name]} {
			if charged[k] != 1 || notified[k] != 1 {
				t.Errorf("%s: charged %d, notified %d times, want once each", k, charged[k], notified[k])
			}
		}
	})

	t.Run("each source's retention", func(t *testing.T) {
		// Deployed with RetentionDays=2: stripe's default is raised to its
		// retry horizon (3 days) plus a day; github keeps its own 240h.
		gv, err := webhook.New(webhook.Config{Provider: "github"})
		if err != nil {
			t.Fatal(err)
		}
		ghKey := "gh-e2e-retention-" + e.runID
		m := webhook.Message{ID: ghKey, Type: "push", Body: []byte(`{"ref":"refs/heads/main","after":"` + ghKey + `"}`)}
		if got := e.deliver(t, furl, http.MethodPost, gv, m, "github", "acme", must(t, "HOOKLEDGER_E2E_SECRET_GITHUB")); got.code != http.StatusOK {
			t.Fatalf("github: %+v", got)
		}
		for _, c := range []struct {
			id   ledger.Key
			want time.Duration
		}{{e.id(keys[furl.name]), 96 * time.Hour}, {ledger.Key{Source: "github", Tenant: "acme", ID: ghKey}, 240 * time.Hour}} {
			rec, err := e.ledger.Get(t.Context(), c.id)
			if err != nil {
				t.Fatal(err)
			}
			// expires_at is whole seconds; created_at milliseconds.
			if got := rec.ExpiresAt.Sub(rec.CreatedAt); got < c.want-time.Second || got > c.want {
				t.Errorf("%s: record lives %v, want %v", c.id.Source, got, c.want)
			}
		}
	})

	t.Run("a throttled receiver refuses before anything is written", func(t *testing.T) {
		// With the function URL nothing but the receiver's concurrency
		// bounds it. Reserved concurrency from the template is ignored by
		// MiniStack, so it is set through the Lambda API: 0 refuses every
		// invocation, as a full reservation refuses the excess on AWS.
		lam := lambdaClient(t)
		receiver := must(t, "HOOKLEDGER_E2E_RECEIVER")
		if _, err := lam.PutFunctionConcurrency(t.Context(), &lambda.PutFunctionConcurrencyInput{FunctionName: &receiver, ReservedConcurrentExecutions: aws.Int32(0)}); err != nil {
			t.Fatal(err)
		}
		restored := false
		restore := func() {
			if !restored {
				restored = true
				lam.DeleteFunctionConcurrency(t.Context(), &lambda.DeleteFunctionConcurrencyInput{FunctionName: &receiver})
			}
		}
		t.Cleanup(restore)
		key := "evt_e2e_throttled_" + e.runID
		m := webhook.Message{Body: stripeEvent(key, "invoice.paid")}
		if got := e.deliver(t, furl, http.MethodPost, sv, m, "stripe", "acme", e.secret); got.code != http.StatusTooManyRequests {
			t.Errorf("throttled: %+v, want 429 (the sender retries)", got)
		}
		if _, err := e.ledger.Get(t.Context(), e.id(key)); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("a throttled delivery left a record (%v)", err)
		}
		restore()
		if got := e.deliver(t, furl, http.MethodPost, sv, m, "stripe", "acme", e.secret); got.code != http.StatusOK || got.status != "accepted" {
			t.Errorf("the sender's retry once the receiver may run: %+v, want 200 accepted", got)
		}
		e.waitStatus(t, e.settle, ledger.Done, e.id(key))
	})
}

func lambdaClient(t *testing.T) *lambda.Client {
	t.Helper()
	cfg, err := sdkconfig.Load(t.Context(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return lambda.NewFromConfig(cfg)
}

type statement struct {
	Action       string
	Principal    string // "*", or "" when it is an object (RawPrincipal)
	RawPrincipal json.RawMessage
	Condition    map[string]map[string]string
}

// receiverPolicy reads the receiver's resource-based policy as deployed.
func receiverPolicy(t *testing.T) []statement {
	t.Helper()
	receiver := must(t, "HOOKLEDGER_E2E_RECEIVER")
	out, err := lambdaClient(t).GetPolicy(t.Context(), &lambda.GetPolicyInput{FunctionName: &receiver})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Statement []struct {
			Action    string
			Principal json.RawMessage
			Condition map[string]map[string]string
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.Policy)), &doc); err != nil {
		t.Fatalf("policy %s: %v", aws.ToString(out.Policy), err)
	}
	var sts []statement
	for _, s := range doc.Statement {
		st := statement{Action: s.Action, RawPrincipal: s.Principal, Condition: s.Condition}
		json.Unmarshal(s.Principal, &st.Principal)
		sts = append(sts, st)
	}
	return sts
}
