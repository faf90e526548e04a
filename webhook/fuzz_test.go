package webhook

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sentinels are the errors every Verify failure must wrap exactly one of.
var sentinels = []error{ErrMissingHeader, ErrMalformedHeader, ErrRepeatedHeader, ErrBadSignature, ErrOutsideTolerance, ErrMalformedBody, ErrNoKey, ErrNoSecret}

// headerError reports whether err is what a header parser may fail with.
func headerError(err error) bool {
	return errors.Is(err, ErrMalformedHeader) || errors.Is(err, ErrRepeatedHeader)
}

// FuzzStripeHeader: parsing never panics; whatever parses re-parses to the
// same value once formatted; whatever is formatted parses back.
func FuzzStripeHeader(f *testing.F) {
	f.Add("t=1700000000,v1="+strings.Repeat("ab", 32)+",v0=00", int64(1700000000), []byte("sig"))
	f.Add("t=1,v1=zz,v1=01", int64(0), []byte{0})
	f.Add(",,t=,v1", int64(-5), []byte{})
	f.Fuzz(func(t *testing.T, header string, ts int64, sig []byte) {
		if h, err := parseStripeHeader(header); err == nil {
			again, err := parseStripeHeader(formatStripeHeader(h))
			if err != nil || !reflect.DeepEqual(again, h) {
				t.Fatalf("re-parse of %q = %+v, %v; want %+v", formatStripeHeader(h), again, err, h)
			}
			if len(h.v1) == 0 || h.timestamp < 0 {
				t.Fatalf("parsed %+v from %q", h, header)
			}
			if _, err := parseStripeHeader(header + "," + header); !errors.Is(err, ErrRepeatedHeader) {
				t.Fatalf("%q joined to itself: error %v, want ErrRepeatedHeader", header, err)
			}
		} else if !headerError(err) {
			t.Fatalf("parse error %v wraps no ErrMalformedHeader or ErrRepeatedHeader", err)
		}
		if ts < 0 || len(sig) == 0 {
			return
		}
		ts %= 1e12
		want := stripeHeader{t: strconv.FormatInt(ts, 10), timestamp: ts, v1: [][]byte{sig, sig}}
		got, err := parseStripeHeader(formatStripeHeader(want))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("parse(format(%+v)) = %+v, %v", want, got, err)
		}
	})
}

// FuzzStandardSignatures: as FuzzStripeHeader, for webhook-signature.
func FuzzStandardSignatures(f *testing.F) {
	f.Add("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1a,AAAA", []byte("sig"))
	f.Add("v1, v1,,, v2,xx", []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, header string, sig []byte) {
		if sigs, err := parseStandardSignatures(header); err == nil {
			again, err := parseStandardSignatures(formatStandardSignatures(sigs))
			if err != nil || !reflect.DeepEqual(again, sigs) {
				t.Fatalf("re-parse = %x, %v; want %x", again, err, sigs)
			}
			if _, err := parseStandardSignatures(header + "," + header); !errors.Is(err, ErrRepeatedHeader) {
				t.Fatalf("%q joined to itself: error %v, want ErrRepeatedHeader", header, err)
			}
		} else if !headerError(err) {
			t.Fatalf("parse error %v wraps no ErrMalformedHeader or ErrRepeatedHeader", err)
		}
		if len(sig) == 0 {
			return
		}
		want := [][]byte{sig, bytes.Repeat(sig, 2)}
		got, err := parseStandardSignatures(formatStandardSignatures(want))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("parse(format(%x)) = %x, %v", want, got, err)
		}
	})
}

// FuzzGitHubSignature: as FuzzStripeHeader, for X-Hub-Signature-256; only
// the canonical spelling parses, its hex in either case (as GitHub's SDKs
// accept it).
func FuzzGitHubSignature(f *testing.F) {
	f.Add("sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", []byte("sig"))
	f.Add("sha1=00", []byte{})
	f.Fuzz(func(t *testing.T, header string, seed []byte) {
		if s, err := parseGitHubSignature(header); err == nil {
			if hex, ok := strings.CutPrefix(header, githubPrefix); !ok || formatGitHubSignature(s) != githubPrefix+strings.ToLower(hex) {
				t.Fatalf("parsed %x from %q, which is not its canonical spelling", s, header)
			}
		} else if !errors.Is(err, ErrMalformedHeader) {
			t.Fatalf("parse error %v wraps no ErrMalformedHeader", err)
		}
		sig := githubMAC(seed, []byte(header))
		got, err := parseGitHubSignature(formatGitHubSignature(sig))
		if err != nil || !bytes.Equal(got, sig) {
			t.Fatalf("parse(format(%x)) = %x, %v", sig, got, err)
		}
	})
}

// FuzzGenericSignatures: as FuzzStripeHeader, for the generic scheme in both
// encodings and with a prefix.
func FuzzGenericSignatures(f *testing.F) {
	f.Add("sha256="+strings.Repeat("0", 64)+", sha256=xx", false, []byte("k"))
	f.Add("AAAA,,  ", true, []byte{})
	f.Fuzz(func(t *testing.T, header string, b64 bool, key []byte) {
		cfg := &GenericConfig{Prefix: "sha256="}
		if b64 {
			cfg.Encoding = "base64"
		}
		g, err := newGenericScheme(cfg, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if sigs, err := g.parseSignatures(header); err == nil {
			parts := make([]string, len(sigs))
			for i, s := range sigs {
				parts[i] = g.formatSignature(s)
			}
			again, err := g.parseSignatures(strings.Join(parts, ", "))
			if err != nil || !reflect.DeepEqual(again, sigs) {
				t.Fatalf("re-parse = %x, %v; want %x", again, err, sigs)
			}
		} else if !errors.Is(err, ErrMalformedHeader) {
			t.Fatalf("parse error %v wraps no ErrMalformedHeader", err)
		}
		sig := g.mac(key, "", []byte(header))
		got, err := g.parseSignatures(g.formatSignature(sig) + " " + g.formatSignature(sig))
		if err != nil || len(got) != 2 || !bytes.Equal(got[0], sig) || !bytes.Equal(got[1], sig) {
			t.Fatalf("parse(format(%x)) = %x, %v", sig, got, err)
		}
	})
}

// FuzzParseUnix: digits parse back to the number they format; anything else
// is refused with ErrMalformedHeader.
func FuzzParseUnix(f *testing.F) {
	f.Add("1700000000", int64(1700000000))
	f.Add("-1", int64(-1))
	f.Add("+1", int64(999999999999))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if got, err := parseUnix(s); err == nil {
			if got < 0 || strings.TrimLeft(strconv.FormatInt(got, 10), "0") != strings.TrimLeft(s, "0") {
				t.Fatalf("parseUnix(%q) = %d", s, got)
			}
		} else if !errors.Is(err, ErrMalformedHeader) {
			t.Fatalf("parseUnix(%q) error %v wraps no ErrMalformedHeader", s, err)
		}
		if n < 0 {
			return
		}
		n %= 1e12
		if got, err := parseUnix(strconv.FormatInt(n, 10)); err != nil || got != n {
			t.Fatalf("parseUnix(format(%d)) = %d, %v", n, got, err)
		}
	})
}

// FuzzNormalize: the canonical form is valid JSON, means the same as the
// input, is a fixed point, lacks the removed field, and the derived key is
// deterministic and well formed.
func FuzzNormalize(f *testing.F) {
	f.Add([]byte(`{"b":1,"a":{"sent_at":"x","y":[1,2,{"z":null}]}}`), "a.sent_at", "evt")
	f.Add([]byte(`{"a":1,"a":2, "n": 1.0e+10}`), "a", "")
	f.Add([]byte(`"\u0000<>&\ud800"`), "x", "t\x00")
	f.Add([]byte(`[1, "two", true]`), "0", "t")
	f.Fuzz(func(t *testing.T, raw []byte, field, typ string) {
		path, perr := parsePath(field)
		var volatile [][]string
		if perr == nil {
			volatile = [][]string{path}
		}
		canon, err := normalize(raw, volatile)
		if err != nil {
			if !errors.Is(err, ErrMalformedBody) {
				t.Fatalf("normalize error %v wraps no ErrMalformedBody", err)
			}
			return
		}
		if !json.Valid(canon) || bytes.ContainsAny(canon, "\n\x00") {
			t.Fatalf("canonical form %q is not compact JSON", canon)
		}
		again, err := normalize(canon, nil)
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("normalize(%q) = %q, %v; not a fixed point", canon, again, err)
		}
		want, _ := decodeJSON(raw)
		for _, p := range volatile {
			deleteAt(want, p)
		}
		got, _ := decodeJSON(canon)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("canonical form %q means %#v, input meant %#v", canon, got, want)
		}
		if perr == nil {
			if _, ok := lookup(got, path); ok {
				t.Fatalf("%q still in %q", field, canon)
			}
		}
		doc1, _ := decodeJSON(raw)
		doc2, _ := decodeJSON(canon)
		k1, err1 := deriveKey(typ, doc1, volatile)
		k2, err2 := deriveKey(typ, doc2, nil)
		if err1 != nil || err2 != nil || k1 != k2 {
			t.Fatalf("deriveKey: %q, %v vs %q, %v", k1, err1, k2, err2)
		}
		if d, ok := strings.CutPrefix(k1, derivedPrefix); !ok || len(d) != 64 {
			t.Fatalf("derived key %q", k1)
		} else if _, err := hex.DecodeString(d); err != nil {
			t.Fatalf("derived key %q", k1)
		}
	})
}

// FuzzVerify: arbitrary deliveries never panic, are never accepted without a
// valid signature, and every rejection wraps exactly one sentinel error.
func FuzzVerify(f *testing.F) {
	f.Add(uint8(0), "t=1700000000,v1="+strings.Repeat("ab", 32), "1700000000", "evt_1", []byte(`{"id":"evt_1"}`))
	f.Add(uint8(1), "sha256="+strings.Repeat("00", 32), "", "d", []byte("Hello"))
	f.Add(uint8(2), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "1614265330", "msg_p5jXN8AQM9LWM0D4loKWxJek", []byte(`{"test": 2432232314}`))
	f.Add(uint8(4), strings.Repeat("0", 64), "99999999999999999999", "", []byte(`[`))
	providers := Providers()
	verifiers := make([]*Verifier, len(providers))
	for i, p := range providers {
		cfg := Config{Provider: p}
		if p == "generic" {
			cfg.Generic = &GenericConfig{TimestampHeader: "X-Timestamp", IDHeader: "X-Id"}
		}
		v, err := New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		verifiers[i] = v
	}
	f.Fuzz(func(t *testing.T, which uint8, sig, ts, id string, body []byte) {
		v := verifiers[int(which)%len(verifiers)]
		if v.Provider() == "gitlab" && (strings.TrimSpace(sig) == secretNew || strings.TrimSpace(sig) == "It's a Secret to Everybody") {
			return // GitLab's "signature" is the secret itself
		}
		h := http.Header{}
		for _, name := range []string{"Stripe-Signature", "X-Hub-Signature-256", "Webhook-Signature", "Svix-Signature", "X-Signature",
			"X-Slack-Signature", "X-Square-Hmacsha256-Signature", "Paddle-Signature", "X-Twilio-Signature", "Linear-Signature",
			"X-Zm-Signature", "Twitch-Eventsub-Message-Signature", "X-Hub-Signature", "X-Gitlab-Token", "X-Shopify-Hmac-Sha256"} {
			h.Set(name, sig)
		}
		for _, name := range []string{"Webhook-Timestamp", "Svix-Timestamp", "X-Timestamp", "X-Slack-Request-Timestamp", "X-Zm-Request-Timestamp", "Twitch-Eventsub-Message-Timestamp"} {
			h.Set(name, ts)
		}
		for _, name := range []string{"Webhook-Id", "Svix-Id", "X-Github-Delivery", "X-Id", "Linear-Delivery", "Twitch-Eventsub-Message-Id", "I-Twilio-Idempotency-Token", "Idempotency-Key", "X-Shopify-Webhook-Id"} {
			h.Set(name, id)
		}
		h.Set("Twitch-Eventsub-Message-Type", "webhook_callback_verification")
		ev, err := v.Verify(&Request{Header: h, Body: body, URL: "https://hooks.example.com/x"}, []string{secretNew, "It's a Secret to Everybody"}, time.Unix(1700000000, 0))
		if err == nil {
			t.Fatalf("%s accepted a forged delivery: %+v", v.Provider(), ev)
		}
		if n := len(slices.DeleteFunc(slices.Clone(sentinels), func(s error) bool { return !errors.Is(err, s) })); n != 1 {
			t.Fatalf("error %v wraps %d sentinel errors, want 1", err, n)
		}
	})
}
