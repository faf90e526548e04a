package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hookledger/hookledger/jsoncheck"
)

// derivedPrefix starts every derived key, so that none is a provider's id.
const derivedPrefix = "derived:"

// body parses the raw body as JSON at most once.
type body struct {
	raw    []byte
	src    []byte // the JSON text doc was decoded from; nil when doc is a form's fields
	doc    any
	err    error
	parsed bool
}

// json returns the body decoded as JSON (numbers kept as json.Number), or an
// error wrapping ErrMalformedBody.
func (b *body) json() (any, error) {
	if !b.parsed {
		b.parsed = true
		b.doc, b.err = decodeJSON(b.raw)
		if b.err == nil {
			b.src = b.raw
		}
	}
	return b.doc, b.err
}

// docReader reads the body's document for the key and type. Its first read
// refuses a copy of a member on the way to one of paths (uniqueAt).
type docReader struct {
	b       body
	paths   [][]string
	checked bool
}

func (r *docReader) doc() (any, error) {
	d, err := r.b.json()
	if err == nil && !r.checked {
		r.checked = true
		err = uniqueAt(r.b.src, r.paths...)
	}
	return d, err
}

// derivedID derives the key of an event without a provider id.
func (v *Verifier) derivedID(r *docReader, typ string) (string, bool, error) {
	doc, err := r.b.json()
	if err != nil && v.rawDerive && len(r.b.raw) > 0 {
		// No volatile field can be removed from a body that is not JSON, so
		// its raw digest is as stable as the sender's bytes.
		return deriveRawKey(typ, r.b.raw), true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("derive key: body is not JSON: %w", ErrNoKey)
	}
	// Every member decides a derived key, so none may come twice.
	if err := uniqueAll(r.b.src); err != nil {
		return "", false, err
	}
	k, err := deriveKey(typ, doc, v.volatile)
	return k, err == nil, err
}

// uniqueAt refuses, with ErrMalformedBody, a member given twice in src on
// the way to one of paths. The decoder keeps the last copy, so the key or
// type would depend on the copies' order. nil src (a form) checks nothing.
func uniqueAt(src []byte, paths ...[]string) error {
	if src == nil || len(paths) == 0 {
		return nil
	}
	return duplicateError(jsoncheck.Duplicate(src, paths...))
}

// uniqueAll is uniqueAt for every member: each decides a derived key.
func uniqueAll(src []byte) error {
	if src == nil {
		return nil
	}
	return duplicateError(jsoncheck.Duplicate(src))
}

func duplicateError(err error) error {
	if d, ok := errors.AsType[*jsoncheck.DuplicateError](err); ok {
		return fmt.Errorf("body member %s.%s appears twice: %w", clip(d.Path), clip(d.Key), ErrMalformedBody)
	}
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", ErrMalformedBody)
	}
	return nil
}

// textAt returns the string at path in doc ("" when there is none). A value
// of another JSON kind is ErrMalformedBody: it is no event type.
func textAt(doc any, path []string) (string, error) {
	v, ok := lookup(doc, path)
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("body's %s is a JSON %s, want a string: %w", strings.Join(path, "."), jsonKind(v), ErrMalformedBody)
	}
	return s, nil
}

// keyAt returns the key at path in doc and whether there is a value there.
// Providers write ids as strings; anything else is ErrMalformedBody, or 123
// and "123" would be one key. With integers set (a configured key_path) an
// integer is taken too, as written.
func keyAt(doc any, path []string, integers bool) (string, bool, error) {
	v, ok := lookup(doc, path)
	if !ok {
		return "", false, nil
	}
	switch x := v.(type) {
	case string:
		return x, true, nil
	case json.Number:
		if integers && !strings.ContainsAny(x.String(), ".eE") {
			return x.String(), true, nil
		}
	}
	want := "a string"
	if integers {
		want = "a string or an integer"
	}
	return "", true, fmt.Errorf("body's %s is a JSON %s, want %s: %w", strings.Join(path, "."), jsonKind(v), want, ErrMalformedBody)
}

// jsonKind names the kind of a decoded JSON value.
func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "value"
}

// decodeJSON decodes exactly one JSON value, numbers as json.Number.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("body is not JSON: %w", ErrMalformedBody)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("body has data after its JSON value: %w", ErrMalformedBody)
	}
	return doc, nil
}

// parsePath splits a dotted JSON path such as "data.object.id". Paths walk
// objects only; a key that contains a dot cannot be addressed.
func parsePath(s string) ([]string, error) {
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("path %q has an empty segment; want dotted object keys such as \"data.object.id\"", s)
		}
	}
	return parts, nil
}

// lookup walks path through nested objects.
func lookup(doc any, path []string) (any, bool) {
	cur := doc
	for _, p := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// stringAt returns the string at path, or "" when there is none.
func stringAt(doc any, path []string) string {
	v, _ := lookup(doc, path)
	s, _ := v.(string)
	return s
}

// deleteAt removes the value at path, if there is one.
func deleteAt(doc any, path []string) {
	if len(path) == 0 {
		return
	}
	parent, ok := lookup(doc, path[:len(path)-1])
	if !ok {
		return
	}
	if obj, ok := parent.(map[string]any); ok {
		delete(obj, path[len(path)-1])
	}
}

// canonicalJSON encodes doc with object keys sorted, no insignificant
// whitespace, no HTML escaping and numbers as they were written.
func canonicalJSON(doc any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode canonical JSON: %w", ErrMalformedBody)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// normalize parses raw as JSON, removes the volatile paths and returns the
// canonical encoding of what is left.
func normalize(raw []byte, volatile [][]string) ([]byte, error) {
	doc, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	for _, p := range volatile {
		deleteAt(doc, p)
	}
	return canonicalJSON(doc)
}

// deriveKey derives the docs/design.md §2 key of an event without a provider
// id: "derived:" + hex(sha256(type + "\x00" + canonical JSON)), after removing
// the volatile paths from doc. Canonical JSON holds no raw NUL, so the last
// NUL splits the input and no two (type, body) pairs hash the same input.
func deriveKey(eventType string, doc any, volatile [][]string) (string, error) {
	for _, p := range volatile {
		deleteAt(doc, p)
	}
	canon, err := canonicalJSON(doc)
	if err != nil {
		return "", fmt.Errorf("derive key: %w", ErrNoKey)
	}
	return deriveRawKey(eventType, canon), nil
}

// deriveRawKey derives the key of a body that is not JSON (generic sources
// without an id header) from its raw bytes. It cannot collide with
// deriveKey: canonical JSON is valid JSON and these bodies are not.
func deriveRawKey(eventType string, raw []byte) string {
	h := sha256.New()
	h.Write([]byte(eventType))
	h.Write([]byte{0})
	h.Write(raw)
	return derivedPrefix + hex.EncodeToString(h.Sum(nil))
}

// canonicalBody is a scheme whose signature covers a canonical form of the
// body: signedContent returns it, or false when raw is signed as it is.
type canonicalBody interface {
	signedContent(raw []byte) ([]byte, bool)
}

// BodyDigest is the hex SHA-256 the ledger keeps of a delivery's body, to
// tell a retry from a different body under the same key. With volatile
// fields (Zoom's event_ts) and a JSON body, it digests the canonical body
// without them: a retry with a new delivery timestamp digests the same.
//
// A scheme that signs something else than the raw bytes (Twilio's sorted
// form fields) digests what it signs. Bytes that re-encode the same signed
// content are the same delivery, which the replay guard must not refuse.
func (v *Verifier) BodyDigest(raw []byte) string {
	if v != nil {
		if c, ok := v.scheme.(canonicalBody); ok {
			if signed, ok := c.signedContent(raw); ok {
				return sha256Hex(signed)
			}
		}
		if len(v.volatile) > 0 {
			if canon, err := normalize(raw, v.volatile); err == nil {
				return sha256Hex(canon)
			}
		}
	}
	return sha256Hex(raw)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
