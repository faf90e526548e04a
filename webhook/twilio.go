package webhook

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Twilio's scheme (https://www.twilio.com/docs/usage/webhooks/webhooks-security,
// and the SDKs: twilio-python request_validator.py, twilio-node webhooks.ts):
//
//   - X-Twilio-Signature is the base64 HMAC-SHA1, keyed with the Auth Token,
//     of the full URL Twilio requested, then, for a form body, every field
//     sorted by name as name + value (a repeated field once per distinct
//     value, values sorted, as both SDKs do).
//   - For a JSON body Twilio adds a bodySHA256 query parameter (hex SHA-256
//     of the body) and signs the URL alone; the body must hash to it.
//   - Twilio is inconsistent about the port, so the SDKs, and this scheme,
//     accept the URL with the port (the default one added) and without.
//   - When a Webhooks Rule matches, X-Twilio-Webhooks-Signature-Settings
//     names the algorithm (algorithm=HMAC_SHA256) and the Setting's
//     SharedKey is the secret (twilio-node WebhookSignatureValidation.md).
//   - No timestamp. The key is I-Twilio-Idempotency-Token, the same on every
//     retry (https://www.twilio.com/docs/usage/webhooks/webhooks-connection-overrides);
//     without it the key is derived from the fields (or JSON body).
const (
	twilioSignatureHeader = "X-Twilio-Signature"
	twilioSettingsHeader  = "X-Twilio-Webhooks-Signature-Settings"
	twilioIdempotency     = "I-Twilio-Idempotency-Token"
	twilioBodyParam       = "bodySHA256"
)

var twilioSpec = providerSpec{
	build: func(cfg Config, _ time.Duration) (providerSetup, error) {
		return providerSetup{scheme: twilioScheme{url: cfg.URL}, keySrc: keyFromMeta, derive: true}, nil
	},
}

// twilioScheme verifies X-Twilio-Signature.
type twilioScheme struct {
	url string // Config.URL
}

// twilioAlgorithm reads X-Twilio-Webhooks-Signature-Settings; absent means
// HMAC-SHA1. A second algorithm element is the header repeated and joined.
func twilioAlgorithm(h http.Header) (func() hash.Hash, error) {
	v, err := listValue(h, twilioSettingsHeader)
	if err != nil {
		if errorsIsMissing(err) {
			return sha1.New, nil
		}
		return nil, err
	}
	var alg string
	for elem := range strings.SplitSeq(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(elem), "=")
		if k != "algorithm" {
			continue
		}
		if alg != "" {
			return nil, &RepeatedHeaderError{Header: twilioSettingsHeader, Detail: "two algorithm elements"}
		}
		if alg = strings.TrimSpace(val); alg == "" {
			return nil, fmt.Errorf("%s: empty algorithm: %w", twilioSettingsHeader, ErrMalformedHeader)
		}
	}
	switch alg {
	case "":
		return nil, fmt.Errorf("%s: no algorithm: %w", twilioSettingsHeader, ErrMalformedHeader)
	case "HMAC_SHA1":
		return sha1.New, nil
	case "HMAC_SHA256":
		return sha256.New, nil
	}
	return nil, fmt.Errorf("%s: algorithm %q unsupported: %w", twilioSettingsHeader, clip(alg), ErrMalformedHeader)
}

// twilioURLs returns the URL as given, and with and without its port, as
// the SDKs try them. Only host:port changes; the rest is kept byte for
// byte. A URL that does not parse is tried as given only.
func twilioURLs(raw string) []string {
	out := []string{raw}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return out
	}
	// Locate host:port in raw: after "//" and any userinfo, before the path.
	start := strings.Index(raw, "//")
	if start < 0 {
		return out
	}
	start += 2
	end := len(raw)
	if i := strings.IndexAny(raw[start:], "/?#"); i >= 0 {
		end = start + i
	}
	if at := strings.LastIndex(raw[start:end], "@"); at >= 0 {
		start += at + 1
	}
	if raw[start:end] != u.Host {
		return out
	}
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	variants := []string{host}
	if port != "" {
		variants = append(variants, net.JoinHostPort(u.Hostname(), port))
	}
	for _, h := range variants {
		v := raw[:start] + h + raw[end:]
		if w, err := url.Parse(v); err != nil || w.Hostname() != u.Hostname() || slices.Contains(out, v) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// twilioPayload is the string Twilio signs after the URL: every form field
// sorted by name, each distinct value (sorted) as name + value.
func twilioPayload(vals url.Values) string {
	var b strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range vals {
			if !yield(k) {
				return
			}
		}
	}) {
		vs := slices.Clone(vals[k])
		slices.Sort(vs)
		for _, v := range slices.Compact(vs) {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	return b.String()
}

// twilioDoc is the form's fields as a document to derive a key from, in the
// signature's terms: a repeated field's values sorted, each once. A field
// repeated in transit, which the signature cannot see, makes no new key.
func twilioDoc(vals url.Values) map[string]any {
	doc := make(map[string]any, len(vals))
	for k, vs := range vals {
		vs = slices.Compact(slices.Sorted(slices.Values(vs)))
		if len(vs) == 1 {
			doc[k] = vs[0]
			continue
		}
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		doc[k] = list
	}
	return doc
}

// signedContent is what Twilio signs of a form body: its fields sorted
// and concatenated (twilioPayload). A JSON body is signed through the
// URL's bodySHA256, its exact bytes, so it is digested as it is.
func (twilioScheme) signedContent(raw []byte) ([]byte, bool) {
	if _, err := decodeJSON(raw); err == nil {
		return nil, false
	}
	_, vals, err := formDoc(raw)
	if err != nil {
		return nil, false
	}
	return []byte(twilioPayload(vals)), true
}

// twilioBodyHash returns the bodySHA256 query parameter of u, if any.
func twilioBodyHash(u string) (string, bool) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", false
	}
	q, err := url.ParseQuery(parsed.RawQuery)
	if err != nil || !q.Has(twilioBodyParam) {
		return "", false
	}
	return q.Get(twilioBodyParam), true
}

// signedURL is the URL Twilio signed for a request that arrived at reqURL:
// reqURL, or Config.URL when set (as configured in Twilio, behind a proxy or
// custom domain). Twilio appends a JSON body's bodySHA256 to the configured
// URL before signing, so one on the request is carried over to a Config.URL
// without its own.
func (s twilioScheme) signedURL(reqURL string) string {
	if s.url == "" {
		return reqURL
	}
	sum, ok := twilioBodyHash(reqURL)
	if !ok {
		return s.url
	}
	if _, has := twilioBodyHash(s.url); has {
		return s.url
	}
	base, fragment, hasFragment := strings.Cut(s.url, "#")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
		if strings.HasSuffix(base, "?") || strings.HasSuffix(base, "&") {
			sep = ""
		}
	}
	u := base + sep + twilioBodyParam + "=" + url.QueryEscape(sum)
	if hasFragment {
		u += "#" + fragment
	}
	return u
}

func (s twilioScheme) authenticate(req *Request, secrets []string, _ time.Time) (meta, error) {
	value, err := singleValue(req.Header, twilioSignatureHeader)
	if err != nil {
		return meta{}, err
	}
	newHash, err := twilioAlgorithm(req.Header)
	if err != nil {
		return meta{}, err
	}
	sig, err := parseBase64Sig(twilioSignatureHeader, newHash().Size(), value)
	if err != nil {
		return meta{}, err
	}
	u := s.signedURL(req.URL)
	if u == "" {
		return meta{}, errNoURL(providerTwilio)
	}
	var m meta
	payload := ""
	bodyHash, jsonBody := twilioBodyHash(u)
	if !jsonBody {
		_, vals, err := formDoc(req.Body)
		if err != nil {
			return meta{}, err
		}
		payload = twilioPayload(vals)
		m.doc, m.hasDoc = twilioDoc(vals), true
	}
	urls := twilioURLs(u)
	compute := func(key []byte) [][]byte {
		out := make([][]byte, len(urls))
		for i, v := range urls {
			out[i] = hmacOf(newHash, key, []byte(v), []byte(payload))
		}
		return out
	}
	if _, err := matchSecret(secrets, rawKey, compute, [][]byte{sig}); err != nil {
		return meta{}, err
	}
	if jsonBody {
		sum := sha256.Sum256(req.Body)
		// Lowercase hex, as Twilio writes it and its SDKs compare it.
		if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(bodyHash)) != 1 {
			return meta{}, fmt.Errorf("body does not hash to the signed %s: %w", twilioBodyParam, ErrBadSignature)
		}
	}
	m.id, m.idErr = singleValue(req.Header, twilioIdempotency)
	return m, nil
}

func (s twilioScheme) sign(m Message, secret string) (http.Header, error) {
	u := s.signedURL(m.URL)
	if u == "" {
		return nil, fmt.Errorf("message needs the webhook URL (URL)")
	}
	h := http.Header{}
	payload := ""
	if want, ok := twilioBodyHash(u); ok {
		sum := sha256.Sum256(m.Body)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("URL's %s is %q, the body hashes to %q", twilioBodyParam, clip(want), got)
		}
		h.Set("Content-Type", "application/json")
	} else {
		if _, err := decodeJSON(m.Body); err == nil && len(m.Body) > 0 {
			sum := sha256.Sum256(m.Body)
			return nil, fmt.Errorf("twilio signs a JSON body through the URL: add %s=%s to the URL's query", twilioBodyParam, hex.EncodeToString(sum[:]))
		}
		_, vals, err := formDoc(m.Body)
		if err != nil {
			return nil, fmt.Errorf("twilio body must be form-encoded: %w", err)
		}
		payload = twilioPayload(vals)
		h.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	h.Set(twilioSignatureHeader, base64.StdEncoding.EncodeToString(hmacOf(sha1.New, []byte(secret), []byte(u), []byte(payload))))
	if m.ID != "" {
		h.Set(twilioIdempotency, m.ID)
	}
	return h, nil
}
