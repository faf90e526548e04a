package webhook

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strings"
	"time"
)

// Defaults and allowed values of GenericConfig.
const (
	genericDefaultHeader = "X-Signature"
	encodingHex          = "hex"
	encodingBase64       = "base64"
)

// genericAlgorithms maps GenericConfig.Algorithm to a hash.
var genericAlgorithms = map[string]func() hash.Hash{
	"sha1":   sha1.New,
	"sha256": sha256.New,
	"sha512": sha512.New,
}

// genericScheme is a configurable HMAC scheme: HMAC of the body, or of
// timestamp + "." + body when a timestamp header is configured, keyed with the
// secret as given.
type genericScheme struct {
	newHash         func() hash.Hash
	size            int
	sigHeader       string
	prefix          string
	base64          bool
	timestampHeader string
	idHeader        string
	typeHeader      string
	tolerance       time.Duration
}

// newGenericScheme validates cfg (nil means all defaults).
func newGenericScheme(cfg *GenericConfig, tol time.Duration) (genericScheme, error) {
	var c GenericConfig
	if cfg != nil {
		c = *cfg
	}
	g := genericScheme{sigHeader: genericDefaultHeader, tolerance: tol, prefix: c.Prefix}
	alg := c.Algorithm
	if alg == "" {
		alg = "sha256"
	}
	newHash, ok := genericAlgorithms[alg]
	if !ok {
		return genericScheme{}, fmt.Errorf("webhook config: generic.algorithm %q unknown; allowed: sha1, sha256, sha512", c.Algorithm)
	}
	g.newHash, g.size = newHash, newHash().Size()
	switch c.Encoding {
	case "", encodingHex:
	case encodingBase64:
		g.base64 = true
	default:
		return genericScheme{}, fmt.Errorf("webhook config: generic.encoding %q unknown; allowed: hex, base64", c.Encoding)
	}
	if strings.ContainsAny(c.Prefix, ", \t") {
		return genericScheme{}, fmt.Errorf("webhook config: generic.prefix %q must not contain commas or whitespace, which separate signatures", c.Prefix)
	}
	headers := []struct {
		field, value string
		dst          *string
	}{
		{"generic.signature_header", c.SignatureHeader, &g.sigHeader},
		{"generic.timestamp_header", c.TimestampHeader, &g.timestampHeader},
		{"generic.id_header", c.IDHeader, &g.idHeader},
		{"generic.type_header", c.TypeHeader, &g.typeHeader},
	}
	for _, h := range headers {
		if h.value == "" {
			continue
		}
		if !validHeaderName(h.value) {
			return genericScheme{}, fmt.Errorf("webhook config: %s %q is not a valid header name", h.field, h.value)
		}
		*h.dst = h.value
	}
	seen := map[string]string{}
	for _, h := range headers {
		if *h.dst == "" {
			continue
		}
		name := http.CanonicalHeaderKey(*h.dst)
		if other, dup := seen[name]; dup || name == "Content-Type" {
			return genericScheme{}, fmt.Errorf("webhook config: %s %q is also used by %s; each header must be distinct", h.field, *h.dst, cmp.Or(other, "Content-Type"))
		}
		seen[name] = h.field
	}
	return g, nil
}

// parseSignatures parses the signature header: signatures separated by
// commas or whitespace, each with the configured prefix (entries without it
// are skipped), in hex (either case) or canonical base64. Entries that do not
// decode to a digest of the algorithm's size are skipped; none left is an
// error. A header repeated and joined with commas is a longer list of the
// same form, read as one.
func (g genericScheme) parseSignatures(value string) ([][]byte, error) {
	var sigs [][]byte
	for _, entry := range strings.FieldsFunc(value, isSignatureSeparator) {
		enc, ok := strings.CutPrefix(entry, g.prefix)
		if !ok {
			continue
		}
		sig, ok := g.decode(enc)
		if !ok || len(sig) != g.size {
			continue
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return nil, fmt.Errorf("%s: no %s signature of %d bytes: %w", g.sigHeader, g.encodingName(), g.size, ErrMalformedHeader)
	}
	return sigs, nil
}

// formatSignature writes one signature as the sender would.
func (g genericScheme) formatSignature(sig []byte) string {
	if g.base64 {
		return g.prefix + base64.StdEncoding.EncodeToString(sig)
	}
	return g.prefix + hex.EncodeToString(sig)
}

func (g genericScheme) decode(s string) ([]byte, bool) {
	if g.base64 {
		return decodeBase64(s)
	}
	return decodeHex(s)
}

func (g genericScheme) encodingName() string {
	if g.base64 {
		return encodingBase64
	}
	return encodingHex
}

func isSignatureSeparator(r rune) bool {
	return r == ',' || r == ' ' || r == '\t'
}

// mac computes the signature of body, with ts ("" when there is no timestamp).
func (g genericScheme) mac(key []byte, ts string, body []byte) []byte {
	m := hmac.New(g.newHash, key)
	if g.timestampHeader != "" {
		m.Write([]byte(ts))
		m.Write([]byte{'.'})
	}
	m.Write(body)
	return m.Sum(nil)
}

func (g genericScheme) authenticate(req *Request, secrets []string, now time.Time) (meta, error) {
	value, err := listValue(req.Header, g.sigHeader)
	if err != nil {
		return meta{}, err
	}
	var ts string
	var t int64
	if g.timestampHeader != "" {
		var err error
		if ts, err = singleValue(req.Header, g.timestampHeader); err != nil {
			return meta{}, err
		}
		if t, err = parseUnix(ts); err != nil {
			return meta{}, fmt.Errorf("%s: %w", g.timestampHeader, err)
		}
	}
	sigs, err := g.parseSignatures(value)
	if err != nil {
		return meta{}, err
	}
	if err := matchAny(secrets, rawKey, func(key []byte) []byte { return g.mac(key, ts, req.Body) }, sigs...); err != nil {
		return meta{}, err
	}
	if g.timestampHeader != "" {
		if err := checkTolerance(t, now, g.tolerance); err != nil {
			return meta{}, err
		}
	}
	var m meta
	if g.idHeader != "" {
		m.id, m.idErr = singleValue(req.Header, g.idHeader)
	}
	if g.typeHeader != "" {
		m.typ, m.typErr = singleValue(req.Header, g.typeHeader)
	}
	return m, nil
}

func (g genericScheme) sign(m Message, secret string) (http.Header, error) {
	h := http.Header{}
	var ts string
	if g.timestampHeader != "" {
		var err error
		if ts, err = signTimestamp(m); err != nil {
			return nil, err
		}
		h.Set(g.timestampHeader, ts)
	}
	if g.idHeader != "" {
		if m.ID == "" {
			return nil, errors.New("message needs an ID for " + g.idHeader)
		}
		h.Set(g.idHeader, m.ID)
	}
	if g.typeHeader != "" && m.Type != "" {
		h.Set(g.typeHeader, m.Type)
	}
	h.Set(g.sigHeader, g.formatSignature(g.mac([]byte(secret), ts, m.Body)))
	h.Set("Content-Type", "application/json")
	return h, nil
}
