package webhook

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// Secrets used across the tests. They look like whsec_ + base64, as Stripe,
// Standard Webhooks and Svix secrets do, so one set serves every provider.
var (
	secretOld   = "whsec_" + base64.StdEncoding.EncodeToString([]byte("hookledger-old-secret-32-bytes!!"))
	secretNew   = "whsec_" + base64.StdEncoding.EncodeToString([]byte("hookledger-new-secret-32-bytes!!"))
	secretOther = "whsec_" + base64.StdEncoding.EncodeToString([]byte("someone-elses-secret-32-bytes!!!"))
)

// testNow is the clock of every test; Verify takes the time as an argument.
var testNow = time.Unix(1700000000, 0)

// setup builds a Verifier or fails the test.
func setup(t *testing.T, cfg Config) *Verifier {
	t.Helper()
	v, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return v
}

// deliver signs m with secret and returns the request a sender would post.
func deliver(t *testing.T, v *Verifier, m Message, secret string) *Request {
	t.Helper()
	h, err := v.Sign(m, secret)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return &Request{Method: http.MethodPost, URL: cmpOr(m.URL, "https://hooks.example.com/"+v.Provider()), Header: h, Body: m.Body}
}

// providerCase describes one provider for the tests shared by all of them.
type providerCase struct {
	cfg       Config
	msg       Message
	wantKey   string
	wantType  string
	sigHeader string // the header carrying the signature
	tsHeader  string // the header carrying the timestamp, "" when it is in the signature header or absent
	idHeader  string // the header carrying the id, "" when the id is in the body
	timed     bool   // the scheme signs a timestamp
	tokenOnly bool   // the "signature" is the secret itself (GitLab): no format to get wrong
}

func providerCases() map[string]providerCase {
	body := []byte(`{"id":"evt_123","type":"invoice.paid","data":{"object":{"id":"in_9"}}}`)
	msg := Message{ID: "msg_123", Type: "invoice.paid", Body: body, URL: "https://hooks.example.com/x", Now: testNow}
	cases := map[string]providerCase{
		"stripe": {
			cfg: Config{Provider: "stripe"}, msg: msg, wantKey: "evt_123", wantType: "invoice.paid",
			sigHeader: "Stripe-Signature", timed: true,
		},
		"github": {
			cfg: Config{Provider: "github"}, msg: msg, wantKey: "msg_123", wantType: "invoice.paid",
			sigHeader: "X-Hub-Signature-256", idHeader: "X-GitHub-Delivery",
		},
		"standard-webhooks": {
			cfg: Config{Provider: "standard-webhooks"}, msg: msg, wantKey: "msg_123", wantType: "invoice.paid",
			sigHeader: "Webhook-Signature", tsHeader: "Webhook-Timestamp", idHeader: "Webhook-Id", timed: true,
		},
		"svix": {
			cfg: Config{Provider: "svix"}, msg: msg, wantKey: "msg_123", wantType: "invoice.paid",
			sigHeader: "Svix-Signature", tsHeader: "Svix-Timestamp", idHeader: "Svix-Id", timed: true,
		},
		"generic": {
			cfg: Config{Provider: "generic", Generic: &GenericConfig{
				Prefix: "sha256=", TimestampHeader: "X-Timestamp", IDHeader: "X-Event-Id", TypeHeader: "X-Event-Type",
			}},
			msg: msg, wantKey: "msg_123", wantType: "invoice.paid",
			sigHeader: "X-Signature", tsHeader: "X-Timestamp", idHeader: "X-Event-Id", timed: true,
		},
		"generic-derived": {
			cfg: Config{Provider: "generic"}, msg: msg, wantType: "",
			sigHeader: "X-Signature",
		},
	}
	for name, pc := range newProviderCases() {
		cases[name] = pc
	}
	return cases
}

func TestProviders(t *testing.T) {
	t.Parallel()
	got := Providers()
	if !slices.IsSorted(got) {
		t.Errorf("Providers() = %v, not sorted", got)
	}
	want := []string{"generic", "github", "gitlab", "intercom", "linear", "paddle", "shopify", "slack", "square", "standard-webhooks", "stripe", "svix", "twilio", "twitch", "zoom"}
	if !slices.Equal(got, want) {
		t.Errorf("Providers() = %v, want %v", got, want)
	}
	for _, p := range got {
		if v := setup(t, Config{Provider: p}); v.Provider() != p {
			t.Errorf("Provider() = %q, want %q", v.Provider(), p)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for name, pc := range providerCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := setup(t, pc.cfg)
			req := deliver(t, v, pc.msg, secretNew)
			if ct := req.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") && ct != "application/x-www-form-urlencoded" {
				t.Errorf("Content-Type = %q", ct)
			}
			ev, err := v.Verify(req, []string{secretNew}, testNow)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if pc.wantKey == "" {
				if !ev.Derived || !strings.HasPrefix(ev.ID, derivedPrefix) || len(ev.ID) != len(derivedPrefix)+64 {
					t.Errorf("key %q derived %v, want a derived key", ev.ID, ev.Derived)
				}
			} else if ev.ID != pc.wantKey || ev.Derived {
				t.Errorf("key %q derived %v, want %q", ev.ID, ev.Derived, pc.wantKey)
			}
			if ev.Type != pc.wantType {
				t.Errorf("type %q, want %q", ev.Type, pc.wantType)
			}
			if ev.Handshake != nil {
				t.Errorf("handshake %+v, want nil", ev.Handshake)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	type negative struct {
		name   string
		secret string                                 // signing secret; secretNew when ""
		msg    func(m Message) Message                // changes the signed message
		req    func(pc providerCase, r *Request) bool // changes the request; false: not applicable
		want   error
	}
	tamperHeader := func(name string, value ...string) func(providerCase, *Request) bool {
		return func(pc providerCase, r *Request) bool {
			r.Header[http.CanonicalHeaderKey(name)] = value
			return true
		}
	}
	negatives := []negative{
		{name: "tampered body", want: ErrBadSignature, req: func(pc providerCase, r *Request) bool {
			if pc.tokenOnly {
				return false // a shared token authenticates the sender, not the body
			}
			r.Body = append(slices.Clone(r.Body), ' ')
			return true
		}},
		{name: "wrong secret", secret: secretOther, want: ErrBadSignature},
		{name: "missing signature header", want: ErrMissingHeader, req: func(pc providerCase, r *Request) bool {
			r.Header.Del(pc.sigHeader)
			return true
		}},
		{name: "empty signature header", want: ErrMissingHeader, req: func(pc providerCase, r *Request) bool {
			return tamperHeader(pc.sigHeader, " ")(pc, r)
		}},
		{name: "malformed signature header", want: ErrMalformedHeader, req: func(pc providerCase, r *Request) bool {
			if pc.tokenOnly {
				return false
			}
			return tamperHeader(pc.sigHeader, "not a signature")(pc, r)
		}},
		{name: "signature of another version only", want: ErrMalformedHeader, req: func(pc providerCase, r *Request) bool {
			switch pc.sigHeader {
			case "Stripe-Signature":
				r.Header.Set(pc.sigHeader, strings.Replace(r.Header.Get(pc.sigHeader), "v1=", "v0=", 1))
			case "Webhook-Signature", "Svix-Signature":
				r.Header.Set(pc.sigHeader, strings.Replace(r.Header.Get(pc.sigHeader), "v1,", "v1a,", 1))
			default:
				return false
			}
			return true
		}},
		{name: "too old", want: ErrOutsideTolerance, msg: func(m Message) Message {
			m.Now = m.Now.Add(-5*time.Minute - time.Second)
			return m
		}},
		{name: "too far in the future", want: ErrOutsideTolerance, msg: func(m Message) Message {
			m.Now = m.Now.Add(5*time.Minute + time.Second)
			return m
		}},
		{name: "missing timestamp", want: ErrMissingHeader, req: func(pc providerCase, r *Request) bool {
			if pc.tsHeader == "" {
				return false
			}
			r.Header.Del(pc.tsHeader)
			return true
		}},
		{name: "malformed timestamp", want: ErrMalformedHeader, req: func(pc providerCase, r *Request) bool {
			switch {
			case pc.tsHeader != "":
				r.Header.Set(pc.tsHeader, "-1700000000")
			case pc.sigHeader == "Stripe-Signature":
				r.Header.Set(pc.sigHeader, strings.Replace(r.Header.Get(pc.sigHeader), "t=", "t=0x", 1))
			default:
				return false
			}
			return true
		}},
		{name: "stripe without timestamp", want: ErrMalformedHeader, req: func(pc providerCase, r *Request) bool {
			if pc.sigHeader != "Stripe-Signature" {
				return false
			}
			_, rest, _ := strings.Cut(r.Header.Get(pc.sigHeader), ",")
			r.Header.Set(pc.sigHeader, rest)
			return true
		}},
		{name: "missing id", want: ErrMissingHeader, req: func(pc providerCase, r *Request) bool {
			if pc.idHeader == "" {
				return false
			}
			r.Header.Del(pc.idHeader)
			return true
		}},
		{name: "two different ids", want: ErrRepeatedHeader, req: func(pc providerCase, r *Request) bool {
			if pc.idHeader == "" {
				return false
			}
			r.Header.Add(pc.idHeader, "msg_other")
			return true
		}},
		{name: "nil header", want: ErrMissingHeader, req: func(_ providerCase, r *Request) bool {
			r.Header = nil
			return true
		}},
	}
	for name, pc := range providerCases() {
		for _, n := range negatives {
			t.Run(name+"/"+n.name, func(t *testing.T) {
				t.Parallel()
				if !pc.timed && n.msg != nil {
					t.Skip("scheme has no timestamp")
				}
				v := setup(t, pc.cfg)
				m := pc.msg
				if n.msg != nil {
					m = n.msg(m)
				}
				req := deliver(t, v, m, cmpOr(n.secret, secretNew))
				if n.req != nil && !n.req(pc, req) {
					t.Skip("not applicable")
				}
				_, err := v.Verify(req, []string{secretNew}, testNow)
				if !errors.Is(err, n.want) {
					t.Fatalf("Verify error = %v, want %v", err, n.want)
				}
			})
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestToleranceEdges accepts timestamps exactly at the tolerance and honours
// a configured tolerance.
func TestToleranceEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		skew    time.Duration
		wantErr error
	}{
		{"stripe 5m old", Config{Provider: "stripe"}, -5 * time.Minute, nil},
		{"stripe 5m ahead", Config{Provider: "stripe"}, 5 * time.Minute, nil},
		{"standard 5m old", Config{Provider: "standard-webhooks"}, -5 * time.Minute, nil},
		{"standard 5m ahead", Config{Provider: "standard-webhooks"}, 5 * time.Minute, nil},
		{"stripe 1m tolerance, 61s old", Config{Provider: "stripe", Tolerance: "1m"}, -61 * time.Second, ErrOutsideTolerance},
		{"svix 10m tolerance, 9m ahead", Config{Provider: "svix", Tolerance: "10m"}, 9 * time.Minute, nil},
		{"generic 30s tolerance, 31s ahead", Config{Provider: "generic", Tolerance: "30s", Generic: &GenericConfig{TimestampHeader: "X-Ts"}}, 31 * time.Second, ErrOutsideTolerance},
		{"github has no timestamp", Config{Provider: "github", Tolerance: "1s"}, -48 * time.Hour, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := setup(t, tt.cfg)
			m := Message{ID: "id_1", Type: "t", Body: []byte(`{"id":"evt_1"}`), Now: testNow.Add(tt.skew)}
			_, err := v.Verify(deliver(t, v, m, secretNew), []string{secretNew}, testNow)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestRotation accepts a delivery signed with either of the current secrets,
// whatever their order, and rejects one signed with any other.
func TestRotation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secrets []string
		want    error
	}{
		{"old then new", []string{secretOld, secretNew}, nil},
		{"new then old", []string{secretNew, secretOld}, nil},
		{"other only", []string{secretOther}, ErrBadSignature},
		{"none", nil, ErrNoSecret},
		{"empty strings only", []string{"", ""}, ErrNoSecret},
		{"empty then new", []string{"", secretNew}, nil},
	}
	for name, pc := range providerCases() {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				v := setup(t, pc.cfg)
				_, err := v.Verify(deliver(t, v, pc.msg, secretNew), tt.secrets, testNow)
				if !errors.Is(err, tt.want) {
					t.Fatalf("Verify error = %v, want %v", err, tt.want)
				}
			})
		}
	}
}

// TestSecretEncoding pins how each scheme reads its secret: Stripe uses the
// whsec_ string as given, Standard Webhooks and Svix base64-decode it.
func TestSecretEncoding(t *testing.T) {
	t.Parallel()
	decoded, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secretNew, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	msg := providerCases()["stripe"].msg

	t.Run("stripe secret wrongly base64-decoded", func(t *testing.T) {
		t.Parallel()
		v := setup(t, Config{Provider: "stripe"})
		// A sender that decoded the secret signs with the decoded bytes.
		req := deliver(t, v, msg, string(decoded))
		if _, err := v.Verify(req, []string{secretNew}, testNow); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("Verify error = %v, want ErrBadSignature", err)
		}
	})
	for _, p := range []string{"standard-webhooks", "svix"} {
		t.Run(p+" secret used without decoding", func(t *testing.T) {
			t.Parallel()
			v := setup(t, Config{Provider: p})
			req := deliver(t, v, msg, secretNew)
			ts := req.Header.Get("Webhook-Timestamp") + req.Header.Get("Svix-Timestamp")
			sig := standardMAC([]byte(secretNew), msg.ID, ts, msg.Body)
			for _, h := range []string{"Webhook-Signature", "Svix-Signature"} {
				if req.Header.Get(h) != "" {
					req.Header.Set(h, formatStandardSignatures([][]byte{sig}))
				}
			}
			if _, err := v.Verify(req, []string{secretNew}, testNow); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("Verify error = %v, want ErrBadSignature", err)
			}
		})
		t.Run(p+" secret without whsec_ prefix", func(t *testing.T) {
			t.Parallel()
			v := setup(t, Config{Provider: p})
			req := deliver(t, v, msg, secretNew)
			if _, err := v.Verify(req, []string{strings.TrimPrefix(secretNew, "whsec_")}, testNow); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
		t.Run(p+" secret not base64", func(t *testing.T) {
			t.Parallel()
			v := setup(t, Config{Provider: p})
			req := deliver(t, v, msg, secretNew)
			if _, err := v.Verify(req, []string{"whsec_not base64!"}, testNow); !errors.Is(err, ErrNoSecret) {
				t.Fatalf("Verify error = %v, want ErrNoSecret", err)
			}
			if _, err := v.Sign(msg, "whsec_not base64!"); err == nil {
				t.Fatal("Sign accepted a secret that is not base64")
			}
		})
	}
}

// TestHeaderForms accepts the header shapes senders and gateways produce.
func TestHeaderForms(t *testing.T) {
	t.Parallel()
	cases := providerCases()
	tests := []struct {
		name     string
		provider string
		change   func(r *Request)
	}{
		{"lowercase keys as API Gateway sends them", "standard-webhooks", func(r *Request) {
			lower := http.Header{}
			for k, vs := range r.Header {
				lower[strings.ToLower(k)] = vs
			}
			r.Header = lower
		}},
		{"svix names for standard-webhooks", "standard-webhooks", func(r *Request) {
			for _, f := range []string{"Id", "Timestamp", "Signature"} {
				r.Header["Svix-"+f] = r.Header["Webhook-"+f]
				delete(r.Header, "Webhook-"+f)
			}
		}},
		{"webhook names for svix", "svix", func(r *Request) {
			for _, f := range []string{"Id", "Timestamp", "Signature"} {
				r.Header["Webhook-"+f] = r.Header["Svix-"+f]
				delete(r.Header, "Svix-"+f)
			}
		}},
		{"several signatures, v1a and a bad one first", "standard-webhooks", func(r *Request) {
			r.Header.Set("Webhook-Signature", "v1a,AAAA v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,x "+r.Header.Get("Webhook-Signature"))
		}},
		{"stripe: several v1, v0 and unknown keys", "stripe", func(r *Request) {
			good := r.Header.Get("Stripe-Signature")
			tpart, v1, _ := strings.Cut(good, ",")
			r.Header.Set("Stripe-Signature", tpart+",v1="+strings.Repeat("ab", 32)+",v0=00,foo=bar,"+v1+", ")
		}},
		{"generic: comma and space separated list", "generic", func(r *Request) {
			r.Header.Set("X-Signature", "sha256="+strings.Repeat("1", 64)+", md5=xx  "+r.Header.Get("X-Signature"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pc := cases[tt.provider]
			v := setup(t, pc.cfg)
			req := deliver(t, v, pc.msg, secretNew)
			tt.change(req)
			ev, err := v.Verify(req, []string{secretNew}, testNow)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if ev.ID != pc.wantKey {
				t.Errorf("key %q, want %q", ev.ID, pc.wantKey)
			}
		})
	}
	// Once refused, now refused as repetitions (TestRepeatedHeadersRefused
	// has the rest): a second line, a second timestamp in one value.
	for name, change := range map[string]func(r *Request){
		"stripe: split over two header values": func(r *Request) {
			tpart, v1, _ := strings.Cut(r.Header.Get("Stripe-Signature"), ",")
			r.Header["Stripe-Signature"] = []string{v1, tpart}
		},
		"stripe: two timestamps in one value": func(r *Request) {
			r.Header.Set("Stripe-Signature", r.Header.Get("Stripe-Signature")+",t=1")
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pc := cases["stripe"]
			v := setup(t, pc.cfg)
			req := deliver(t, v, pc.msg, secretNew)
			change(req)
			if _, err := v.Verify(req, []string{secretNew}, testNow); !errors.Is(err, ErrRepeatedHeader) {
				t.Fatalf("Verify error = %v, want ErrRepeatedHeader", err)
			}
		})
	}
}

// TestKeys covers where keys and types come from: provider defaults,
// overrides and what happens when they are absent.
func TestKeys(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"evt_1","type":"charge.refunded","data":{"object":{"id":"ch_7","n":12}},"kind":{"name":"k"}}`)
	tests := []struct {
		name      string
		cfg       Config
		body      []byte
		header    map[string]string
		wantKey   string
		wantType  string
		wantErr   error
		noDerived bool
	}{
		{name: "stripe default", cfg: Config{Provider: "stripe"}, body: body, wantKey: "evt_1", wantType: "charge.refunded"},
		{name: "stripe key_path", cfg: Config{Provider: "stripe", KeyPath: "data.object.id"}, body: body, wantKey: "ch_7", wantType: "charge.refunded"},
		{name: "stripe key_path to a number", cfg: Config{Provider: "stripe", KeyPath: "data.object.n"}, body: body, wantKey: "12", wantType: "charge.refunded"},
		{name: "stripe key_path to an object", cfg: Config{Provider: "stripe", KeyPath: "data.object"}, body: body, wantErr: ErrNoKey},
		{name: "stripe key_path missing", cfg: Config{Provider: "stripe", KeyPath: "data.nothing.id"}, body: body, wantErr: ErrNoKey},
		{name: "stripe key_header", cfg: Config{Provider: "stripe", KeyHeader: "X-Request-Id"}, body: body, header: map[string]string{"X-Request-Id": "req_5"}, wantKey: "req_5", wantType: "charge.refunded"},
		{name: "stripe key_header absent", cfg: Config{Provider: "stripe", KeyHeader: "X-Request-Id"}, body: body, wantErr: ErrNoKey},
		{name: "stripe body without id", cfg: Config{Provider: "stripe"}, body: []byte(`{"type":"x"}`), wantErr: ErrNoKey},
		{name: "stripe body with empty id", cfg: Config{Provider: "stripe"}, body: []byte(`{"id":"","type":"x"}`), wantErr: ErrNoKey},
		{name: "stripe body with huge id", cfg: Config{Provider: "stripe"}, body: []byte(`{"id":"` + strings.Repeat("x", maxKeyLen+1) + `"}`), wantErr: ErrNoKey},
		{name: "stripe body not JSON", cfg: Config{Provider: "stripe"}, body: []byte(`id=evt_1`), wantErr: ErrMalformedBody},
		{name: "stripe body with trailing data", cfg: Config{Provider: "stripe"}, body: []byte(`{"id":"evt_1"} {}`), wantErr: ErrMalformedBody},
		{name: "stripe type_path", cfg: Config{Provider: "stripe", TypePath: "kind.name"}, body: body, wantKey: "evt_1", wantType: "k"},
		{name: "github key_path", cfg: Config{Provider: "github", KeyPath: "data.object.id"}, body: body, wantKey: "ch_7", wantType: "ev"},
		{name: "github key_path, body not JSON", cfg: Config{Provider: "github", KeyPath: "id"}, body: []byte("x"), wantErr: ErrMalformedBody},
		{name: "github key_header", cfg: Config{Provider: "github", KeyHeader: "X-GitHub-Hook-ID"}, body: body, header: map[string]string{"X-GitHub-Hook-ID": "hook-3"}, wantKey: "hook-3", wantType: "ev"},
		{name: "github body not JSON is fine", cfg: Config{Provider: "github"}, body: []byte("payload=%7B%7D"), wantKey: "id_1", wantType: "ev"},
		{name: "standard type from body", cfg: Config{Provider: "standard-webhooks"}, body: body, wantKey: "id_1", wantType: "charge.refunded"},
		{name: "standard non-JSON body has no type", cfg: Config{Provider: "standard-webhooks"}, body: []byte("plain text"), wantKey: "id_1"},
		{name: "standard array body has no type", cfg: Config{Provider: "standard-webhooks"}, body: []byte(`[{"type":"x"}]`), wantKey: "id_1"},
		{name: "standard non-string type", cfg: Config{Provider: "svix"}, body: []byte(`{"type":7}`), wantErr: ErrMalformedBody},
		{name: "standard type_path", cfg: Config{Provider: "svix", TypePath: "kind.name"}, body: body, wantKey: "id_1", wantType: "k"},
		{name: "standard type_path, body not JSON", cfg: Config{Provider: "svix", TypePath: "kind.name"}, body: []byte("x"), wantErr: ErrMalformedBody},
		// A body that is not JSON has no volatile fields to remove: its key
		// is derived from the raw bytes (sha256 of "\x00not json").
		{name: "generic derived, body not JSON", cfg: Config{Provider: "generic"}, body: []byte("not json"), wantKey: "derived:" + rawDigest("\x00not json")},
		{name: "generic derived, empty body", cfg: Config{Provider: "generic"}, body: nil, wantErr: ErrNoKey},
		{name: "generic key_path wins over derivation", cfg: Config{Provider: "generic", KeyPath: "id"}, body: body, wantKey: "evt_1", noDerived: true},
		{name: "generic key_header wins over id_header", cfg: Config{Provider: "generic", KeyHeader: "X-Other", Generic: &GenericConfig{IDHeader: "X-Id"}}, body: body, header: map[string]string{"X-Other": "o-1"}, wantKey: "o-1", noDerived: true},
		{name: "generic type header absent is no type", cfg: Config{Provider: "generic", Generic: &GenericConfig{IDHeader: "X-Id", TypeHeader: "X-Type"}}, body: body, wantKey: "id_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := setup(t, tt.cfg)
			req := deliver(t, v, Message{ID: "id_1", Type: "ev", Body: tt.body, Now: testNow}, secretNew)
			if tt.name == "generic type header absent is no type" {
				req.Header.Del("X-Type")
			}
			for k, val := range tt.header {
				req.Header.Set(k, val)
			}
			ev, err := v.Verify(req, []string{secretNew}, testNow)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if tt.wantKey != "" && ev.ID != tt.wantKey {
				t.Errorf("key %q, want %q", ev.ID, tt.wantKey)
			}
			if ev.Type != tt.wantType {
				t.Errorf("type %q, want %q", ev.Type, tt.wantType)
			}
			if ev.Derived && tt.noDerived {
				t.Errorf("key %q marked derived", ev.ID)
			}
		})
	}
}

// TestDerivedKey checks docs/design.md §2 derivation on fixtures: a retry that changes
// only volatile fields, key order and whitespace gets the same key, another
// event gets another key, and the key matches one computed independently.
func TestDerivedKey(t *testing.T) {
	t.Parallel()
	cfg := Config{
		Provider:       "generic",
		TypePath:       "event",
		VolatileFields: []string{"sent_at", "delivery.attempt", "not.there"},
	}
	key := func(t *testing.T, file string) string {
		t.Helper()
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		v := setup(t, cfg)
		ev, err := v.Verify(deliver(t, v, Message{Body: raw, Now: testNow}, secretNew), []string{secretNew}, testNow)
		if err != nil {
			t.Fatalf("Verify %s: %v", file, err)
		}
		if !ev.Derived || ev.Type != "order.paid" {
			t.Fatalf("%s: event %+v, want a derived key and type order.paid", file, ev)
		}
		return ev.ID
	}
	a := key(t, "testdata/derive/order_a.json")
	retry := key(t, "testdata/derive/order_a_retry.json")
	b := key(t, "testdata/derive/order_b.json")
	// Computed with Python: remove sent_at and delivery.attempt, then
	// json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
	// and "derived:" + sha256(b"order.paid\x00" + canonical).hexdigest().
	const want = "derived:488d39808626c4689a60e14da84e8fabaf981666bf07a4bce69bc573588f8dab"
	if a != want {
		t.Errorf("key of order_a = %q, want %q", a, want)
	}
	if retry != a {
		t.Errorf("retry key %q differs from %q", retry, a)
	}
	if b == a {
		t.Errorf("different events share key %q", a)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		volatile       []string
		wantErr        error
	}{
		{name: "sorted, compact", in: "{ \"b\" : 1, \"a\" : [ 2 , 1 ] }", want: `{"a":[2,1],"b":1}`},
		{name: "numbers as written", in: `{"n":1.50,"m":1e3,"big":12345678901234567890}`, want: `{"big":12345678901234567890,"m":1e3,"n":1.50}`},
		{name: "no HTML escaping", in: `{"h":"<a&b>"}`, want: `{"h":"<a&b>"}`},
		{name: "nested volatile", in: `{"a":{"b":1,"c":2},"d":3}`, volatile: []string{"a.b", "d"}, want: `{"a":{"c":2}}`},
		{name: "volatile through a non-object", in: `{"a":[1],"b":"x"}`, volatile: []string{"a.0", "b.c"}, want: `{"a":[1],"b":"x"}`},
		{name: "scalar body", in: ` "x" `, want: `"x"`},
		{name: "not JSON", in: `{`, wantErr: ErrMalformedBody},
		{name: "two values", in: `1 2`, wantErr: ErrMalformedBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var paths [][]string
			for _, p := range tt.volatile {
				pp, err := parsePath(p)
				if err != nil {
					t.Fatal(err)
				}
				paths = append(paths, pp)
			}
			got, err := normalize([]byte(tt.in), paths)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("normalize error = %v, want %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("normalize = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		json    string
		wantErr string // substring of the error; "" means valid
	}{
		{name: "stripe", json: `{"provider":"stripe"}`},
		{name: "tolerance", json: `{"provider":"svix","tolerance":"90s"}`},
		{name: "generic defaults", json: `{"provider":"generic"}`},
		{name: "generic full", json: `{"provider":"generic","generic":{"algorithm":"sha512","signature_header":"X-Sig","prefix":"v1=","encoding":"base64","timestamp_header":"X-Ts","id_header":"X-Id","type_header":"X-Type"},"volatile_fields":["a.b"],"type_path":"t"}`},
		{name: "unknown provider", json: `{"provider":"paypal"}`, wantErr: `provider "paypal" unknown; allowed: generic, github, gitlab, intercom, linear, paddle, shopify, slack, square, standard-webhooks, stripe, svix, twilio, twitch, zoom`},
		{name: "no provider", json: `{}`, wantErr: "provider"},
		{name: "bad tolerance", json: `{"provider":"stripe","tolerance":"5 minutes"}`, wantErr: "tolerance"},
		{name: "negative tolerance", json: `{"provider":"stripe","tolerance":"-5m"}`, wantErr: "tolerance"},
		{name: "zero tolerance", json: `{"provider":"stripe","tolerance":"0s"}`, wantErr: "tolerance"},
		{name: "generic block on stripe", json: `{"provider":"stripe","generic":{}}`, wantErr: "generic"},
		{name: "bad algorithm", json: `{"provider":"generic","generic":{"algorithm":"md5"}}`, wantErr: "generic.algorithm \"md5\" unknown; allowed: sha1, sha256, sha512"},
		{name: "bad encoding", json: `{"provider":"generic","generic":{"encoding":"base32"}}`, wantErr: "generic.encoding \"base32\" unknown; allowed: hex, base64"},
		{name: "bad header name", json: `{"provider":"generic","generic":{"signature_header":"X Sig"}}`, wantErr: "generic.signature_header"},
		{name: "same header twice", json: `{"provider":"generic","generic":{"id_header":"x-signature"}}`, wantErr: "generic.id_header"},
		{name: "content-type as header", json: `{"provider":"generic","generic":{"type_header":"content-type"}}`, wantErr: "generic.type_header"},
		{name: "prefix with separator", json: `{"provider":"generic","generic":{"prefix":"a, b"}}`, wantErr: "generic.prefix"},
		{name: "bad key header", json: `{"provider":"github","key_header":"a:b"}`, wantErr: "key_header"},
		{name: "key header and path", json: `{"provider":"github","key_header":"X-A","key_path":"id"}`, wantErr: "key_header and key_path"},
		{name: "bad key path", json: `{"provider":"stripe","key_path":"data..id"}`, wantErr: "key_path"},
		{name: "bad type path", json: `{"provider":"stripe","type_path":"."}`, wantErr: "type_path"},
		{name: "bad volatile field", json: `{"provider":"generic","volatile_fields":["ok",""]}`, wantErr: "volatile_fields[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var cfg Config
			if err := json.Unmarshal([]byte(tt.json), &cfg); err != nil {
				t.Fatal(err)
			}
			_, err := New(cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestSignNeeds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    Config
		m      Message
		secret string
	}{
		{"stripe without time", Config{Provider: "stripe"}, Message{Body: []byte(`{}`)}, secretNew},
		{"github without id", Config{Provider: "github"}, Message{Type: "push"}, secretNew},
		{"github without type", Config{Provider: "github"}, Message{ID: "1"}, secretNew},
		{"standard without id", Config{Provider: "standard-webhooks"}, Message{Now: testNow}, secretNew},
		{"standard before 1970", Config{Provider: "standard-webhooks"}, Message{ID: "1", Now: time.Unix(-1, 0)}, secretNew},
		{"generic id header without id", Config{Provider: "generic", Generic: &GenericConfig{IDHeader: "X-Id"}}, Message{}, secretNew},
		{"empty secret", Config{Provider: "github"}, Message{ID: "1", Type: "push"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := setup(t, tt.cfg).Sign(tt.m, tt.secret); err == nil {
				t.Fatal("Sign succeeded, want an error")
			}
		})
	}
}

// TestZeroValues never panics on nil or zero inputs.
func TestZeroValues(t *testing.T) {
	t.Parallel()
	var nilV *Verifier
	if _, err := nilV.Verify(&Request{}, []string{"s"}, testNow); err == nil {
		t.Error("nil Verifier verified")
	}
	if _, err := nilV.Sign(Message{}, "s"); err == nil {
		t.Error("nil Verifier signed")
	}
	if nilV.Provider() != "" {
		t.Error("nil Verifier has a provider")
	}
	if _, err := (&Verifier{}).Verify(&Request{}, []string{"s"}, testNow); err == nil {
		t.Error("zero Verifier verified")
	}
	for _, p := range Providers() {
		v := setup(t, Config{Provider: p})
		if _, err := v.Verify(nil, []string{"s"}, testNow); !errors.Is(err, ErrMissingHeader) {
			t.Errorf("%s: Verify(nil) error = %v", p, err)
		}
		if _, err := v.Verify(&Request{}, []string{"s"}, time.Time{}); !errors.Is(err, ErrMissingHeader) {
			t.Errorf("%s: Verify(empty) error = %v", p, err)
		}
	}
}

func rawDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ErrNoKey means "the signature is valid, the key is not there", which
// hookledger verify reports with its own exit code: for every provider, a
// body signed with another secret never yields ErrNoKey, and a validly
// signed body without a usable key yields nothing else.
func TestErrNoKeyOnlyAfterAValidSignature(t *testing.T) {
	t.Parallel()
	bodies := [][]byte{[]byte(`{"type":"invoice.paid"}`), []byte(`not json at all`), []byte(`{"id":"","type":"x"}`), []byte(`[1,2]`)}
	for name, pc := range providerCases() {
		for _, body := range bodies {
			v := setup(t, pc.cfg)
			m := pc.msg
			m.Body = body
			secret := secretNew
			h, err := v.Sign(m, secret)
			if err != nil {
				continue // a body this scheme cannot sign (Twilio: JSON needs bodySHA256 in the URL)
			}
			req := &Request{Method: http.MethodPost, URL: cmpOr(m.URL, "https://hooks.example.com/"+v.Provider()), Header: h, Body: m.Body}
			if _, err := v.Verify(req, []string{secretOld}, testNow); errors.Is(err, ErrNoKey) {
				t.Errorf("%s %q: signed with another secret, yet ErrNoKey: %v", name, body, err)
			}
			_, err = v.Verify(req, []string{secret}, testNow)
			if err != nil && !errors.Is(err, ErrNoKey) && !errors.Is(err, ErrMalformedBody) {
				t.Errorf("%s %q: validly signed, error %v wraps neither ErrNoKey nor ErrMalformedBody", name, body, err)
			}
		}
	}
}
