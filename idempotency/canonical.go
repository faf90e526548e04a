package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// canonical encodes v as canonical JSON, the text keys and validation
// digests are taken over: v's encoding/json encoding, with object members
// sorted by name, no insignificant whitespace, no HTML escaping, and
// numbers normalised by their exact decimal value (see canonicalNumber). A
// Go value and the same value decoded from any JSON spelling therefore
// give the same key.
//
// Strings must be valid UTF-8 (no invalid bytes, no lone surrogate
// escapes such as "\ud800"): encoding/json turns each such byte or escape
// into U+FFFD, so two different byte strings would share one key and one
// caller would get the other's result. They are refused (errInvalidUTF8,
// ErrBadInput to the caller) rather than encoded losslessly, because JSON
// text cannot carry them either: an event that arrives as JSON has been
// through that replacement before any handler sees it, so a lossless
// encoding would only protect keys built in Go, would need a second key
// format beside the canonical JSON the golden digests pin, and would make a
// key differ between a Go string and the same bytes read from an event. A
// client sending binary keys should encode them (hex, base64) first.
func canonical(v any) ([]byte, error) {
	var raw []byte
	x, isRaw := v.(json.RawMessage)
	if isRaw {
		raw = x
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	c, err := canonicalRaw(raw)
	if err != nil {
		return nil, err
	}
	if !isRaw {
		if err := checkReplaced(c, v); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// errInvalidUTF8 is the error for key or validation material holding a
// string that is not valid UTF-8.
var errInvalidUTF8 = errors.New("a string is not valid UTF-8 (invalid bytes or a lone surrogate escape); encode binary keys as hex or base64")

var replacementChar = []byte("\uFFFD")

// checkReplaced reports whether encoding/json replaced invalid UTF-8 in the
// Go value v while encoding it (canon is the result): only possible when
// canon holds U+FFFD, so the walk over v is skipped otherwise.
func checkReplaced(canon []byte, v any) error {
	if !bytes.Contains(canon, replacementChar) {
		return nil
	}
	return checkUTF8(reflect.ValueOf(v), 0)
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// checkUTF8 walks v as encoding/json encodes it and reports a string, map
// key or MarshalText output that is not valid UTF-8. A json.Marshaler's
// output is JSON text, which canonicalRaw checks.
func checkUTF8(v reflect.Value, depth int) error {
	if !v.IsValid() {
		return nil
	}
	if depth > 1000 { // json.Marshal refuses cycles before this
		return fmt.Errorf("value nested too deeply")
	}
	t := v.Type()
	addr := v.CanAddr() && t.Kind() != reflect.Pointer
	if t.Implements(marshalerType) || (addr && reflect.PointerTo(t).Implements(marshalerType)) {
		return nil
	}
	if t.Implements(textMarshalerType) || (addr && reflect.PointerTo(t).Implements(textMarshalerType)) {
		if (t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface) && v.IsNil() {
			return nil
		}
		if !v.CanInterface() {
			return nil
		}
		m, ok := v.Interface().(encoding.TextMarshaler)
		if !ok {
			m = v.Addr().Interface().(encoding.TextMarshaler)
		}
		b, err := m.MarshalText()
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			return errInvalidUTF8
		}
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return errInvalidUTF8
		}
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			return checkUTF8(v.Elem(), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // base64
		}
		for i := range v.Len() {
			if err := checkUTF8(v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if err := checkUTF8(it.Key(), depth+1); err != nil {
				return err
			}
			if err := checkUTF8(it.Value(), depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("json") == "-" {
				continue
			}
			if err := checkUTF8(v.Field(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// canonicalRaw re-encodes JSON text canonically.
func canonicalRaw(raw []byte) ([]byte, error) {
	if err := checkStrings(raw); err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var t any
	if err := d.Decode(&t); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, t); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStrings reports a string in the JSON text raw that is not valid
// UTF-8 (invalid bytes, or a \u escape of a lone surrogate), which the
// decoder would turn into U+FFFD. Text outside strings is the decoder's to
// judge.
func checkStrings(raw []byte) error {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u`)) {
		return nil // the common case
	}
	in := false
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case !in:
			in = c == '"'
			i++
		case c == '"':
			in = false
			i++
		case c == '\\':
			if i+1 < len(raw) && raw[i+1] == 'u' {
				r, ok := hex4(raw, i+2)
				switch {
				case !ok:
					i += 2 // the decoder reports it
				case utf16.IsSurrogate(r):
					lo, ok := rune(0), false
					if r < 0xdc00 && i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
						lo, ok = hex4(raw, i+8)
					}
					if !ok || utf16.DecodeRune(r, lo) == utf8.RuneError {
						return errInvalidUTF8
					}
					i += 12
				default:
					i += 6
				}
				continue
			}
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				return errInvalidUTF8
			}
			i += n
		}
	}
	return nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return rune(v), err == nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case json.Number:
		buf.WriteString(canonicalNumber(string(x)))
	case string:
		writeString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)               // cannot fail for a string
	buf.Truncate(buf.Len() - 1) // Encode appends a newline
}

// maxPlainDigits bounds the integers written out in full: an integer of
// more digits (1e400, say) is written in exponent form, so that a short
// literal with a large exponent never expands into a long text.
const maxPlainDigits = 64

// canonicalNumber normalises a JSON number literal by its exact decimal
// value, with no float64 in between (which merged distinct decimals of
// more than 17 digits and wrote integers past 2^53 in a form of their own)
// and no big-number arithmetic on the value (1e999999999 stays cheap: only
// its exponent is added to):
//
//   - zero, whatever its sign or spelling, is "0";
//   - an integer of at most 64 digits is written out in full, without
//     sign for positive values: 1, 1.0, 1e0 and 10e-1 are "1", 1e16 and
//     10000000000000000 are "10000000000000000";
//   - any other number is written as strconv.FormatFloat(f, 'g', -1, 64)
//     would write it, from its own significant digits rather than a
//     float64's: "0.1", "3.14", "0.00012", "-2.5e-07", "1.2345675e+06",
//     "1e+400" (the exponent form when the adjusted exponent is under -4
//     or at least 6, or for integers of more than 64 digits).
//
// Integers of up to 64 digits, and non-integers that float64 carried
// exactly as written, therefore keep the text (and key) the float64-based
// normalisation gave them.
func canonicalNumber(lit string) string {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if !strings.ContainsAny(lit, ".eE") && len(lit) <= maxPlainDigits {
		// An integer literal: JSON allows no leading zeros, so it is
		// canonical as written, but for the sign of zero.
		if lit == "0" {
			return "0"
		}
		if neg {
			return "-" + lit
		}
		return lit
	}
	mant, exp := lit, ""
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant, exp = lit[:i], lit[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0"
	}
	sig := strings.TrimRight(digits, "0")
	// The value is sig × 10^e and its adjusted exponent (the power of ten
	// of its first digit) is e + len(sig) - 1.
	e := newExponent(exp).add(int64(len(digits)-len(sig)) - int64(len(frac)))
	adj := e.add(int64(len(sig) - 1))
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case e.atLeast(0) && e.add(int64(len(sig))).atMost(maxPlainDigits):
		b.WriteString(sig)
		b.WriteString(strings.Repeat("0", int(e.small)))
	case adj.atLeast(-4) && adj.atMost(5):
		if a := int(adj.small); a >= 0 {
			b.WriteString(sig[:a+1])
			b.WriteByte('.')
			b.WriteString(sig[a+1:])
		} else {
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", -a-1))
			b.WriteString(sig)
		}
	default:
		b.WriteByte(sig[0])
		if len(sig) > 1 {
			b.WriteByte('.')
			b.WriteString(sig[1:])
		}
		b.WriteByte('e')
		b.WriteString(adj.expText())
	}
	return b.String()
}

// exponent is a decimal exponent: an int64 while it fits comfortably,
// arbitrary precision beyond (a literal may carry any number of exponent
// digits; the cost stays proportional to them).
type exponent struct {
	small int64
	big   *big.Int // nil while small holds the value
}

const smallExponent = 1 << 60

func newExponent(text string) exponent {
	if text == "" {
		return exponent{}
	}
	if t := strings.TrimLeft(strings.TrimLeft(text, "+-"), "0"); len(t) <= 18 {
		v, _ := strconv.ParseInt(strings.TrimPrefix(text, "+"), 10, 64)
		return exponent{small: v}
	}
	v, _ := new(big.Int).SetString(strings.TrimPrefix(text, "+"), 10)
	return exponent{big: v}
}

func (x exponent) add(d int64) exponent {
	if x.big == nil {
		if v := x.small + d; v > -smallExponent && v < smallExponent {
			return exponent{small: v}
		}
		x.big = big.NewInt(x.small)
	}
	return exponent{big: new(big.Int).Add(x.big, big.NewInt(d))}
}

func (x exponent) cmp(v int64) int {
	if x.big == nil {
		return cmpInt(x.small, v)
	}
	return x.big.Cmp(big.NewInt(v))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (x exponent) atLeast(v int64) bool { return x.cmp(v) >= 0 }
func (x exponent) atMost(v int64) bool  { return x.cmp(v) <= 0 }

// expText writes the exponent as FormatFloat does: a sign and at least two
// digits.
func (x exponent) expText() string {
	var t string
	if x.big != nil {
		t = x.big.String()
	} else {
		t = strconv.FormatInt(x.small, 10)
	}
	sign := "+"
	if strings.HasPrefix(t, "-") {
		sign, t = "-", t[1:]
	}
	if len(t) < 2 {
		t = "0" + t
	}
	return sign + t
}

// digest is the hex SHA-256 of canonical JSON.
func digest(canon []byte) string {
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// missing reports whether a selected value counts as no key: null, "",
// [], {}, or an array whose members are all missing. 0 and false are keys.
func missing(canon []byte) bool {
	switch string(canon) {
	case "null", `""`, "[]", "{}":
		return true
	}
	if len(canon) > 0 && canon[0] == '[' {
		var xs []json.RawMessage
		if json.Unmarshal(canon, &xs) != nil {
			return false
		}
		for _, x := range xs {
			if !missing(x) {
				return false
			}
		}
		return true
	}
	return false
}
