package webhook

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzPaddleHeader: parsing never panics; whatever parses re-parses to the
// same value once formatted; whatever is formatted parses back.
func FuzzPaddleHeader(f *testing.F) {
	f.Add("ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8", int64(1710929255), []byte("k"))
	f.Add("ts=1;ts=2;h1=zz", int64(0), []byte{})
	f.Add(";;h1;ts=", int64(-1), []byte{1})
	f.Fuzz(func(t *testing.T, header string, ts int64, key []byte) {
		if h, err := parsePaddleHeader(header); err == nil {
			again, err := parsePaddleHeader(formatPaddleHeader(h))
			if err != nil || !reflect.DeepEqual(again, h) {
				t.Fatalf("re-parse of %q = %+v, %v; want %+v", formatPaddleHeader(h), again, err, h)
			}
			for _, s := range h.h1 {
				if len(s) != sha256.Size {
					t.Fatalf("h1 of %d bytes from %q", len(s), header)
				}
			}
		} else if !headerError(err) {
			t.Fatalf("parse error %v wraps no ErrMalformedHeader or ErrRepeatedHeader", err)
		}
		if ts < 0 {
			return
		}
		ts %= 1e12
		sig := paddleMAC(key, strconv.FormatInt(ts, 10), []byte(header))
		want := paddleHeader{ts: strconv.FormatInt(ts, 10), timestamp: ts, h1: [][]byte{sig, sig}}
		got, err := parsePaddleHeader(formatPaddleHeader(want))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("parse(format(%+v)) = %+v, %v", want, got, err)
		}
	})
}

// hexSchemes are the prefix + hex signature headers of the added providers.
var hexSchemes = []struct {
	name, prefix string
	size         int
	anyCase      bool
}{
	{slackSignatureHeader, "v0=", sha256.Size, false},
	{zoomSignatureHeader, "v0=", sha256.Size, false},
	{twitchSignatureHeader, twitchPrefix, sha256.Size, false},
	{intercomSignatureHeader, intercomPrefix, sha1.Size, false},
	{linearSignatureHeader, "", sha256.Size, false},
	{githubSignatureHeader, githubPrefix, sha256.Size, true},
}

// FuzzHexSigs: for every hex scheme, a parsed signature has the digest's
// size and was given as prefix + hex, lowercase unless the scheme takes
// either case; a formatted digest parses back; failures wrap
// ErrMalformedHeader.
func FuzzHexSigs(f *testing.F) {
	f.Add(uint8(0), "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503", []byte("k"))
	f.Add(uint8(2), "sha256=ZZ", []byte{})
	f.Add(uint8(3), "sha1=44BD97DC0017AC5492344BD4B8EE7466590AC690", []byte{0})
	f.Add(uint8(4), " ", []byte{})
	f.Add(uint8(5), "sha256=A2114D57B48EAC39B9AD189DD8316235A7B4A8D21A10BD27519666489C69B503", []byte("k"))
	f.Fuzz(func(t *testing.T, which uint8, header string, key []byte) {
		s := hexSchemes[int(which)%len(hexSchemes)]
		if sig, err := parseHexSig(s.name, s.prefix, s.size, header, s.anyCase); err == nil {
			spelled := header
			if s.anyCase {
				spelled = s.prefix + strings.ToLower(strings.TrimPrefix(header, s.prefix))
			}
			if len(sig) != s.size || s.prefix+hexString(sig) != spelled {
				t.Fatalf("%s: parsed %x from %q", s.name, sig, header)
			}
		} else if !errors.Is(err, ErrMalformedHeader) {
			t.Fatalf("%s: parse error %v wraps no ErrMalformedHeader", s.name, err)
		}
		sig := hmacSHA256(key, []byte(header))[:s.size]
		got, err := parseHexSig(s.name, s.prefix, s.size, s.prefix+hexString(sig), s.anyCase)
		if err != nil || !bytes.Equal(got, sig) {
			t.Fatalf("%s: parse(format(%x)) = %x, %v", s.name, sig, got, err)
		}
	})
}

// FuzzBase64Sigs: as FuzzHexSigs, for the base64 headers (Square, Shopify:
// 32 bytes; Twilio: 20 or 32): only the canonical encoding parses.
func FuzzBase64Sigs(f *testing.F) {
	f.Add("GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=", true, []byte("k"))
	f.Add("RSOYDt4T1cUTdK1PDd93/VVr8B8=", false, []byte{})
	f.Add("not base64", true, []byte{1})
	f.Fuzz(func(t *testing.T, header string, wide bool, key []byte) {
		size := sha1.Size
		if wide {
			size = sha256.Size
		}
		if sig, err := parseBase64Sig("X-Sig", size, header); err == nil {
			if len(sig) != size || base64.StdEncoding.EncodeToString(sig) != header {
				t.Fatalf("parsed %x from %q", sig, header)
			}
		} else if !errors.Is(err, ErrMalformedHeader) {
			t.Fatalf("parse error %v wraps no ErrMalformedHeader", err)
		}
		sig := hmacSHA256(key, []byte(header))[:size]
		got, err := parseBase64Sig("X-Sig", size, base64.StdEncoding.EncodeToString(sig))
		if err != nil || !bytes.Equal(got, sig) {
			t.Fatalf("parse(format(%x)) = %x, %v", sig, got, err)
		}
	})
}

// FuzzTwitchTimestamp: a parsed timestamp formats and parses back to the
// same instant; any instant Twitch could send parses back exactly.
func FuzzTwitchTimestamp(f *testing.F) {
	f.Add("2019-11-16T10:11:12.634234626Z", int64(1573899072634234626))
	f.Add("2019-11-16T10:11:12+01:00", int64(0))
	f.Add("1700000000", int64(-1))
	f.Fuzz(func(t *testing.T, s string, nanos int64) {
		if ts, err := parseTwitchTimestamp(s); err == nil {
			again, err := parseTwitchTimestamp(ts.Format(time.RFC3339Nano))
			if err != nil || !again.Equal(ts) {
				t.Fatalf("re-parse of %q = %v, %v; want %v", s, again, err, ts)
			}
		} else if !errors.Is(err, ErrMalformedHeader) {
			t.Fatalf("parse error %v wraps no ErrMalformedHeader", err)
		}
		if nanos < 0 {
			return
		}
		want := time.Unix(0, nanos).UTC()
		got, err := parseTwitchTimestamp(want.Format(time.RFC3339Nano))
		if err != nil || !got.Equal(want) {
			t.Fatalf("parse(format(%v)) = %v, %v", want, got, err)
		}
	})
}

// FuzzFormDoc: the form normalisation keeps every field and value in order;
// re-encoding the fields (which reorders them) changes neither the
// document, nor Twilio's signed payload, nor the derived key; failures wrap
// ErrMalformedBody.
func FuzzFormDoc(f *testing.F) {
	f.Add([]byte(twilioForm))
	f.Add([]byte("Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234"))
	f.Add([]byte("a=%zz&b"))
	f.Add([]byte("payload=%7B%22type%22%3A%22x%22%7D&&=&a=1&a=1"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		doc, vals, err := formDoc(raw)
		if err != nil {
			if !errors.Is(err, ErrMalformedBody) {
				t.Fatalf("formDoc error %v wraps no ErrMalformedBody", err)
			}
			return
		}
		if len(doc) != len(vals) {
			t.Fatalf("doc has %d fields, form %d", len(doc), len(vals))
		}
		for k, vs := range vals {
			switch d := doc[k].(type) {
			case string:
				if len(vs) != 1 || vs[0] != d {
					t.Fatalf("field %q: doc %q, form %q", k, d, vs)
				}
			case []any:
				if len(d) != len(vs) {
					t.Fatalf("field %q: doc %v, form %q", k, d, vs)
				}
				for i := range vs {
					if d[i] != vs[i] {
						t.Fatalf("field %q: doc %v, form %q", k, d, vs)
					}
				}
			default:
				t.Fatalf("field %q: doc %T", k, d)
			}
		}
		doc2, vals2, err := formDoc([]byte(vals.Encode()))
		if err != nil || !reflect.DeepEqual(doc, doc2) {
			t.Fatalf("re-encoded form: %v, %v; want %v", doc2, err, doc)
		}
		if twilioPayload(vals) != twilioPayload(vals2) {
			t.Fatalf("twilio payload changed by re-encoding: %q vs %q", twilioPayload(vals), twilioPayload(vals2))
		}
		k1, err1 := deriveKey("t", doc, nil)
		k2, err2 := deriveKey("t", doc2, nil)
		if err1 != nil || err2 != nil || k1 != k2 {
			t.Fatalf("derived keys %q, %v vs %q, %v", k1, err1, k2, err2)
		}
	})
}

// FuzzTwilioURLs: the URL as given is always tried first, variants are
// distinct, and a variant differs from it only in the port.
func FuzzTwilioURLs(f *testing.F) {
	f.Add("https://mycompany.com/myapp.php?foo=1&bar=2")
	f.Add("http://mycompany.com:1234/x")
	f.Add("https://[::1]:8443/t?bodySHA256=00")
	f.Add("not a url")
	f.Fuzz(func(t *testing.T, raw string) {
		got := twilioURLs(raw)
		if len(got) == 0 || got[0] != raw || len(got) > 3 {
			t.Fatalf("twilioURLs(%q) = %q", raw, got)
		}
		seen := map[string]bool{}
		for _, v := range got {
			if seen[v] {
				t.Fatalf("twilioURLs(%q) repeats %q", raw, v)
			}
			seen[v] = true
		}
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		for _, v := range got[1:] {
			w, err := url.Parse(v)
			if err != nil || w.Hostname() != u.Hostname() || w.RawQuery != u.RawQuery || w.Scheme != u.Scheme {
				t.Fatalf("variant %q of %q: %v", v, raw, err)
			}
		}
	})
}

// FuzzSlackBody: any authenticated body is a handshake (only for a JSON
// url_verification with a challenge), a document, or an error wrapping
// ErrMalformedBody.
func FuzzSlackBody(f *testing.F) {
	f.Add([]byte(slackDocsBody))
	f.Add([]byte(`{"type":"url_verification","challenge":"c"}`))
	f.Add([]byte(`{"type":"event_callback","event_id":"E1","event":{"type":"message"}}`))
	f.Add([]byte("payload=%7B%22type%22%3A%22block_actions%22%7D"))
	f.Add([]byte("payload=1&payload=2"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := slackBody(raw)
		if err != nil {
			if !errors.Is(err, ErrMalformedBody) {
				t.Fatalf("slackBody error %v wraps no ErrMalformedBody", err)
			}
			return
		}
		if m.handshake != nil {
			doc, err := decodeJSON(raw)
			if err != nil || stringAt(doc, []string{"type"}) != "url_verification" || string(m.handshake.Body) != stringAt(doc, []string{"challenge"}) || len(m.handshake.Body) == 0 {
				t.Fatalf("handshake %q from %q", m.handshake.Body, raw)
			}
			return
		}
		if !m.hasDoc {
			t.Fatalf("no document and no handshake from %q", raw)
		}
		if _, err := canonicalJSON(m.doc); err != nil {
			t.Fatalf("document of %q does not encode: %v", raw, err)
		}
	})
}

// FuzzLinearTimestamp: webhookTimestamp is read as milliseconds, or refused
// with ErrMalformedBody.
func FuzzLinearTimestamp(f *testing.F) {
	f.Add([]byte(`{"webhookTimestamp":1700000000000}`))
	f.Add([]byte(`{"webhookTimestamp":"1700000000000"}`))
	f.Add([]byte(`{"webhookTimestamp":1.5e12}`))
	f.Add([]byte(`{"webhookTimestamp":-1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		doc, err := decodeJSON(raw)
		if err != nil {
			return
		}
		ts, err := linearTimestamp(doc)
		if err != nil {
			if !errors.Is(err, ErrMalformedBody) {
				t.Fatalf("error %v wraps no ErrMalformedBody", err)
			}
			return
		}
		v, _ := lookup(doc, []string{linearTimestampField})
		n, err := strconv.ParseInt(string(v.(json.Number)), 10, 64)
		if err != nil {
			t.Fatalf("webhookTimestamp %v accepted but is not an integer", v)
		}
		if ts.UnixMilli() != n || n < 0 {
			t.Fatalf("webhookTimestamp %v read as %v", v, ts)
		}
	})
}
