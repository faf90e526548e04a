package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// onceHeaders lists, per provider case, the headers its scheme reads once: the
// signature, timestamp, id and type headers a signed delivery carries.
// joinedOK names those whose comma-joined repetition cannot be told from
// one legitimate value (the generic scheme's list of signatures; GitLab's
// token, which may hold a comma, is refused by the signature check instead).
var onceHeaders = map[string]struct {
	headers  []string
	joinedOK []string
}{
	"stripe":            {headers: []string{"Stripe-Signature"}},
	"github":            {headers: []string{"X-Hub-Signature-256", "X-GitHub-Delivery", "X-GitHub-Event"}},
	"standard-webhooks": {headers: []string{"Webhook-Signature", "Webhook-Timestamp", "Webhook-Id"}},
	"svix":              {headers: []string{"Svix-Signature", "Svix-Timestamp", "Svix-Id"}},
	"generic":           {headers: []string{"X-Signature", "X-Timestamp", "X-Event-Id", "X-Event-Type"}, joinedOK: []string{"X-Signature"}},
	"generic-derived":   {headers: []string{"X-Signature"}, joinedOK: []string{"X-Signature"}},
	"slack":             {headers: []string{"X-Slack-Signature", "X-Slack-Request-Timestamp"}},
	"square":            {headers: []string{"X-Square-Hmacsha256-Signature"}},
	"paddle":            {headers: []string{"Paddle-Signature"}},
	"twilio":            {headers: []string{"X-Twilio-Signature", "I-Twilio-Idempotency-Token"}},
	"linear":            {headers: []string{"Linear-Signature", "Linear-Delivery", "Linear-Event"}},
	"zoom":              {headers: []string{"X-Zm-Signature", "X-Zm-Request-Timestamp"}},
	"twitch": {headers: []string{"Twitch-Eventsub-Message-Signature", "Twitch-Eventsub-Message-Timestamp",
		"Twitch-Eventsub-Message-Id", "Twitch-Eventsub-Message-Type", "Twitch-Eventsub-Subscription-Type"}},
	"intercom": {headers: []string{"X-Hub-Signature"}},
	"gitlab":   {headers: []string{"X-Gitlab-Token", "Idempotency-Key", "X-Gitlab-Event"}, joinedOK: []string{"X-Gitlab-Token"}},
	// X-Shopify-Webhook-Id is read only when there is no event id.
	"shopify": {headers: []string{"X-Shopify-Hmac-Sha256", "X-Shopify-Event-Id", "X-Shopify-Topic"}},
}

// TestRepeatedHeadersRefused refuses every header a scheme reads once when
// it comes twice: as two header lines (net/http, hookledger dev), with the
// same value or another, and as API Gateway hands them over, one value
// joined with a comma.
func TestRepeatedHeadersRefused(t *testing.T) {
	t.Parallel()
	cases := providerCases()
	if len(onceHeaders) != len(cases) {
		t.Fatalf("onceHeaders covers %d provider cases, want all %d", len(onceHeaders), len(cases))
	}
	forms := []struct {
		name   string
		repeat func(v string) []string
	}{
		{"two lines, same value", func(v string) []string { return []string{v, v} }},
		{"two lines, another value", func(v string) []string { return []string{v, "x" + v} }},
		{"joined with a comma", func(v string) []string { return []string{v + "," + v} }},
		{"joined with a comma and a space", func(v string) []string { return []string{v + ", " + v} }},
	}
	for name, ro := range onceHeaders {
		pc := cases[name]
		for _, header := range ro.headers {
			for _, form := range forms {
				t.Run(name+"/"+header+"/"+form.name, func(t *testing.T) {
					t.Parallel()
					v := setup(t, pc.cfg)
					req := deliver(t, v, pc.msg, secretNew)
					key := http.CanonicalHeaderKey(header)
					value := req.Header.Get(key)
					if value == "" {
						t.Fatalf("Sign sent no %s", header)
					}
					req.Header[key] = form.repeat(value)
					_, err := v.Verify(req, []string{secretNew}, testNow)
					if strings.HasPrefix(form.name, "joined") && slices.Contains(ro.joinedOK, header) {
						if errors.Is(err, ErrRepeatedHeader) {
							t.Fatalf("Verify error = %v; the joined form of %s is one legitimate value", err, header)
						}
						return
					}
					rh, ok := errors.AsType[*RepeatedHeaderError](err)
					if !ok || !errors.Is(err, ErrRepeatedHeader) || !strings.EqualFold(rh.Header, header) {
						t.Fatalf("Verify error = %v, want a RepeatedHeaderError for %s", err, header)
					}
				})
			}
		}
	}
}

// TestRepeatedHeaderUnderLowercaseKeys: a map with one header under two
// spellings of its name (a header map that was not canonicalised) is a
// repetition too, not a value picked by map order.
func TestRepeatedHeaderUnderLowercaseKeys(t *testing.T) {
	t.Parallel()
	pc := providerCases()["github"]
	v := setup(t, pc.cfg)
	req := deliver(t, v, pc.msg, secretNew)
	req.Header["x-github-delivery"] = []string{"other"}
	if _, err := v.Verify(req, []string{secretNew}, testNow); !errors.Is(err, ErrRepeatedHeader) {
		t.Fatalf("Verify error = %v, want ErrRepeatedHeader", err)
	}
}

// TestKeyHeaderRepeated: a configured key_header follows the same rule.
func TestKeyHeaderRepeated(t *testing.T) {
	t.Parallel()
	v := setup(t, Config{Provider: "stripe", KeyHeader: "X-Request-Id"})
	m := providerCases()["stripe"].msg
	for _, values := range [][]string{{"a", "b"}, {"a,b"}, {"a", "a"}} {
		req := deliver(t, v, m, secretNew)
		req.Header["X-Request-Id"] = values
		if _, err := v.Verify(req, []string{secretNew}, testNow); !errors.Is(err, ErrRepeatedHeader) {
			t.Errorf("%q: Verify error = %v, want ErrRepeatedHeader", values, err)
		}
	}
}

// TestSameValueUnderBothSpellings: the two spellings of one header (Svix's
// and Standard Webhooks' names, Shopify's two formats) may both be sent
// with the same value; with different values they are refused.
func TestSameValueUnderBothSpellings(t *testing.T) {
	t.Parallel()
	pc := providerCases()["svix"]
	v := setup(t, pc.cfg)
	req := deliver(t, v, pc.msg, secretNew)
	for _, f := range []string{"Id", "Timestamp", "Signature"} {
		req.Header["Webhook-"+f] = req.Header["Svix-"+f]
	}
	if _, err := v.Verify(req, []string{secretNew}, testNow); err != nil {
		t.Fatalf("Verify with both families, same values: %v", err)
	}
	req.Header.Set("Webhook-Id", "msg_other")
	if rh, ok := errors.AsType[*RepeatedHeaderError](func() error {
		_, err := v.Verify(req, []string{secretNew}, testNow)
		return err
	}()); !ok || rh.Header != "Webhook-Id" {
		t.Fatalf("different ids under both families: got %v, want a RepeatedHeaderError for Webhook-Id", rh)
	}
}

// TestStandardSignatureListIsNotARepetition: one webhook-signature header
// listing several signatures, as the spec allows, is one value.
func TestStandardSignatureListIsNotARepetition(t *testing.T) {
	t.Parallel()
	pc := providerCases()["standard-webhooks"]
	v := setup(t, pc.cfg)
	req := deliver(t, v, pc.msg, secretNew)
	req.Header.Set("Webhook-Signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v1a,AAAA "+req.Header.Get("Webhook-Signature"))
	if _, err := v.Verify(req, []string{secretNew}, testNow); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

var hexDigest = regexp.MustCompile(`[0-9a-f]{40,}`)

// TestHexSignatureCaseFollowsEachSDK: an upper-case hex signature verifies
// where the provider's SDK decodes the hex (stripe-go, octokit, Paddle's Go
// SDK) and for a generic source (.NET's Convert.ToHexString sends upper);
// it is refused where the SDK or documented sample compares hex strings.
// Before, upper case was refused everywhere.
func TestHexSignatureCaseFollowsEachSDK(t *testing.T) {
	t.Parallel()
	anyCase := map[string]bool{"stripe": true, "github": true, "paddle": true, "twitch": true, "generic": true, "generic-derived": true,
		"slack": false, "linear": false, "zoom": false, "intercom": false}
	for name, pc := range providerCases() {
		upperOK, hexSigned := anyCase[name]
		if !hexSigned {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := setup(t, pc.cfg)
			req := deliver(t, v, pc.msg, secretNew)
			key := http.CanonicalHeaderKey(pc.sigHeader)
			sig := req.Header.Get(key)
			upper := hexDigest.ReplaceAllStringFunc(sig, strings.ToUpper)
			if upper == sig {
				t.Fatalf("no hex digest in %s: %q", key, sig)
			}
			req.Header.Set(key, upper)
			_, err := v.Verify(req, []string{secretNew}, testNow)
			if upperOK && err != nil {
				t.Fatalf("Verify with %q: %v, want it accepted", upper, err)
			}
			if !upperOK && !errors.Is(err, ErrMalformedHeader) {
				t.Fatalf("Verify with %q: error %v, want ErrMalformedHeader", upper, err)
			}
			// Either case, a digest under another secret is still wrong.
			if _, err := v.Verify(req, []string{secretOld}, testNow); err == nil {
				t.Fatalf("Verify with %q under another secret: accepted", upper)
			}
		})
	}
}

// TestBase64SignaturesAreCanonical refuses a base64 signature whose unused
// low bits are set: it decodes to the right digest, but it is not the
// string the provider sends, and the SDKs compare encoded strings.
func TestBase64SignaturesAreCanonical(t *testing.T) {
	t.Parallel()
	cases := providerCases()
	b64 := cases["generic"]
	b64.cfg.Generic = &GenericConfig{Encoding: "base64", Prefix: "sha256="}
	cases["generic-base64"] = b64
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for name, pc := range cases {
		switch name {
		case "shopify", "square", "standard-webhooks", "svix", "twilio", "generic-base64":
		default:
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := setup(t, pc.cfg)
			req := deliver(t, v, pc.msg, secretNew)
			key := http.CanonicalHeaderKey(pc.sigHeader)
			sig := req.Header.Get(key)
			pad := len(strings.TrimRight(sig, "="))
			if pad == len(sig) {
				t.Fatalf("no padded base64 in %s: %q", key, sig)
			}
			last := strings.IndexByte(alphabet, sig[pad-1])
			loose := sig[:pad-1] + string(alphabet[last^1]) + sig[pad:]
			req.Header.Set(key, loose)
			if _, err := v.Verify(req, []string{secretNew}, testNow); !errors.Is(err, ErrMalformedHeader) {
				t.Fatalf("Verify with %q (signed %q): error %v, want ErrMalformedHeader", loose, sig, err)
			}
		})
	}
}

// TestShopifyHeaderFormats accepts both of Shopify's header formats (the
// X-Shopify- names and the newer ones without X-, which Shopify's own
// library reads first), and refuses a delivery whose two spellings of one
// header disagree.
func TestShopifyHeaderFormats(t *testing.T) {
	t.Parallel()
	pc := providerCases()["shopify"]
	v := setup(t, pc.cfg)
	newFormat := func(r *Request, keepOld bool) {
		for k, vs := range r.Header {
			if name, ok := strings.CutPrefix(k, "X-Shopify-"); ok {
				r.Header["Shopify-"+name] = vs
				if !keepOld {
					delete(r.Header, k)
				}
			}
		}
	}
	tests := []struct {
		name    string
		change  func(r *Request)
		wantKey string
		wantErr error
	}{
		{"X- format", func(*Request) {}, "msg_123", nil},
		{"new format only", func(r *Request) { newFormat(r, false) }, "msg_123", nil},
		{"new format, lowercase keys", func(r *Request) {
			newFormat(r, false)
			lower := http.Header{}
			for k, vs := range r.Header {
				lower[strings.ToLower(k)] = vs
			}
			r.Header = lower
		}, "msg_123", nil},
		{"both formats, same values", func(r *Request) { newFormat(r, true) }, "msg_123", nil},
		{"new event id without webhook id", func(r *Request) {
			newFormat(r, false)
			r.Header.Del("Shopify-Webhook-Id")
			r.Header.Set("Shopify-Event-Id", "evt-new")
		}, "evt-new", nil},
		{"both formats, different signatures", func(r *Request) {
			newFormat(r, true)
			r.Header.Set("Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(make([]byte, 32)))
		}, "", ErrRepeatedHeader},
		{"both formats, different event ids", func(r *Request) {
			newFormat(r, true)
			r.Header.Set("Shopify-Event-Id", "evt-other")
		}, "", ErrRepeatedHeader},
		{"both formats, different topics", func(r *Request) {
			newFormat(r, true)
			r.Header.Set("Shopify-Topic", "orders/paid")
		}, "", ErrRepeatedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := deliver(t, v, pc.msg, secretNew)
			tt.change(req)
			ev, err := v.Verify(req, []string{secretNew}, testNow)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Verify: %v", err)
			case ev.ID != tt.wantKey || ev.Type != pc.wantType:
				t.Fatalf("key %q type %q, want %q %q", ev.ID, ev.Type, tt.wantKey, pc.wantType)
			}
		})
	}
}

// TestShopifySignSendsWhatShopifySends: Sign emits the headers a real
// Shopify delivery carries, which Shopify's library requires.
func TestShopifySignSendsWhatShopifySends(t *testing.T) {
	t.Parallel()
	pc := providerCases()["shopify"]
	v := setup(t, pc.cfg)
	h, err := v.Sign(pc.msg, secretNew)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"X-Shopify-Hmac-Sha256", "X-Shopify-Topic", "X-Shopify-Shop-Domain", "X-Shopify-API-Version",
		"X-Shopify-Webhook-Id", "X-Shopify-Event-Id", "X-Shopify-Triggered-At"} {
		if h.Get(name) == "" {
			t.Errorf("Sign sent no %s: %v", name, h)
		}
	}
	if got, want := h.Get("X-Shopify-Triggered-At"), pc.msg.Now.UTC().Format(time.RFC3339Nano); got != want {
		t.Errorf("X-Shopify-Triggered-At = %q, want %q", got, want)
	}
	if _, err := v.Sign(Message{ID: "x", Body: pc.msg.Body, Now: testNow}, secretNew); err == nil {
		t.Error("Sign without a Type (X-Shopify-Topic) succeeded")
	}
}

// TestJSONKeyAndTypeKinds: a key or type the provider writes as a JSON
// string is refused in any other kind (123 and "123" would otherwise be
// one key), and the members that decide them may not be repeated.
func TestJSONKeyAndTypeKinds(t *testing.T) {
	t.Parallel()
	type tc struct {
		name     string
		cfg      Config
		body     string
		wantKey  string // "" with wantErr
		wantType string
		wantErr  error
	}
	stripe := Config{Provider: "stripe"}
	tests := []tc{
		{"stripe string id", stripe, `{"id":"123","type":"t"}`, "123", "t", nil},
		{"stripe number id", stripe, `{"id":123,"type":"t"}`, "", "", ErrMalformedBody},
		{"stripe null id", stripe, `{"id":null,"type":"t"}`, "", "", ErrMalformedBody},
		{"stripe object id", stripe, `{"id":{"x":1},"type":"t"}`, "", "", ErrMalformedBody},
		{"stripe number type", stripe, `{"id":"evt_1","type":5}`, "", "", ErrMalformedBody},
		{"stripe two ids", stripe, `{"id":"evt_1","type":"t","id":"evt_2"}`, "", "", ErrMalformedBody},
		{"stripe two equal ids", stripe, `{"id":"evt_1","id":"evt_1","type":"t"}`, "", "", ErrMalformedBody},
		{"stripe two types", stripe, `{"id":"evt_1","type":"a","type":"b"}`, "", "", ErrMalformedBody},
		{"stripe repeats elsewhere", stripe, `{"id":"evt_1","type":"t","data":{"x":1,"x":2}}`, "evt_1", "t", nil},
		{"slack number event_id", Config{Provider: "slack"}, `{"type":"event_callback","event_id":7,"event":{"type":"m"}}`, "", "", ErrMalformedBody},
		{"slack two event_ids", Config{Provider: "slack"}, `{"type":"event_callback","event_id":"Ev1","event_id":"Ev2","event":{"type":"m"}}`, "", "", ErrMalformedBody},
		{"slack two event types", Config{Provider: "slack"}, `{"type":"event_callback","event_id":"Ev1","event":{"type":"m","type":"n"}}`, "", "", ErrMalformedBody},
		{"slack two outer types", Config{Provider: "slack"}, `{"type":"url_verification","challenge":"c","type":"event_callback","event_id":"Ev1"}`, "", "", ErrMalformedBody},
		{"square number event_id", Config{Provider: "square"}, `{"type":"payment.updated","event_id":1}`, "", "", ErrMalformedBody},
		{"paddle number event_id", Config{Provider: "paddle", Tolerance: "5m"}, `{"event_type":"x","event_id":1}`, "", "", ErrMalformedBody},
		{"paddle number event_type", Config{Provider: "paddle", Tolerance: "5m"}, `{"event_type":1,"event_id":"evt_1"}`, "", "", ErrMalformedBody},
		{"intercom number id", Config{Provider: "intercom"}, `{"type":"notification_event","id":1,"topic":"x"}`, "", "", ErrMalformedBody},
		{"intercom two topics", Config{Provider: "intercom"}, `{"id":"notif_1","topic":"x","topic":"ping"}`, "", "", ErrMalformedBody},
		{"standard number type", Config{Provider: "standard-webhooks"}, `{"type":5}`, "", "", ErrMalformedBody},
		{"standard two types", Config{Provider: "standard-webhooks"}, `{"type":"a","type":"b"}`, "", "", ErrMalformedBody},
		{"standard body not JSON", Config{Provider: "standard-webhooks"}, `plain text`, "msg_123", "", nil},
		{"zoom two events", Config{Provider: "zoom"}, `{"event":"a","event":"b"}`, "", "", ErrMalformedBody},
		{"zoom repeated member anywhere", Config{Provider: "zoom"}, `{"event":"a","payload":{"object":{"id":1,"id":2}}}`, "", "", ErrMalformedBody},
		{"generic derived, repeated member", Config{Provider: "generic"}, `{"a":1,"a":2}`, "", "", ErrMalformedBody},
		{"key_path string", Config{Provider: "generic", KeyPath: "data.id"}, `{"data":{"id":"123"}}`, "123", "", nil},
		{"key_path integer", Config{Provider: "generic", KeyPath: "data.id"}, `{"data":{"id":123}}`, "123", "", nil},
		{"key_path negative integer", Config{Provider: "generic", KeyPath: "id"}, `{"id":-5}`, "-5", "", nil},
		{"key_path fraction", Config{Provider: "generic", KeyPath: "id"}, `{"id":1.5}`, "", "", ErrMalformedBody},
		{"key_path exponent", Config{Provider: "generic", KeyPath: "id"}, `{"id":1e3}`, "", "", ErrMalformedBody},
		{"key_path bool", Config{Provider: "generic", KeyPath: "id"}, `{"id":true}`, "", "", ErrMalformedBody},
		{"key_path repeated parent", Config{Provider: "generic", KeyPath: "data.id"}, `{"data":{"id":"1"},"data":{"id":"2"}}`, "", "", ErrMalformedBody},
		{"type_path number", Config{Provider: "gitlab", TypePath: "action"}, `{"action":3}`, "", "", ErrMalformedBody},
		{"type_path repeated", Config{Provider: "gitlab", TypePath: "action"}, `{"action":"a","action":"b"}`, "", "", ErrMalformedBody},
	}
	linear := `{"type":"Issue","type":"Comment","webhookTimestamp":` + strconv.FormatInt(testNow.UnixMilli(), 10) + `}`
	tests = append(tests, tc{"linear body type repeated", Config{Provider: "linear"}, linear, "", "", ErrMalformedBody})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := setup(t, tt.cfg)
			m := Message{ID: "msg_123", Type: "from-header", Body: []byte(tt.body), URL: "https://hooks.example.com/x", Now: testNow}
			if tt.cfg.Provider == "linear" {
				m.Type = "" // the type falls back to the body's
			}
			ev, err := v.Verify(deliver(t, v, m, secretNew), []string{secretNew}, testNow)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Verify = %+v, %v; want an error wrapping %v", ev, err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Verify: %v", err)
			case ev.ID != tt.wantKey || ev.Type != tt.wantType:
				t.Fatalf("key %q type %q, want %q %q", ev.ID, ev.Type, tt.wantKey, tt.wantType)
			}
		})
	}
}

// TestSlackInteractivityPayloadRepeatedType: the JSON inside a form
// field is held to the same rule as a JSON body.
func TestSlackInteractivityPayloadRepeatedType(t *testing.T) {
	t.Parallel()
	v := setup(t, Config{Provider: "slack"})
	body := "payload=" + strings.NewReplacer("{", "%7B", "}", "%7D", `"`, "%22", ":", "%3A", ",", "%2C").Replace(`{"type":"block_actions","type":"view_submission"}`)
	_, err := v.Verify(deliver(t, v, Message{Body: []byte(body), Now: testNow}, secretNew), []string{secretNew}, testNow)
	if !errors.Is(err, ErrMalformedBody) {
		t.Fatalf("Verify error = %v, want ErrMalformedBody", err)
	}
}
