package wire

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// This file holds a small strict JSON scanner. It validates a body in one
// pass and reports where the members of an object start and end, so that the
// codec can read the envelope fields and rewrite single values without
// re-marshalling the rest of the body (CONTRACT.md 2.4).
//
// The grammar is RFC 8259 with two extra rules: the text must be valid UTF-8,
// and containers may nest at most maxJSONDepth levels deep.

// maxJSONDepth bounds the nesting of arrays and objects, as encoding/json
// does, so that a hostile body cannot exhaust the stack.
const maxJSONDepth = 10000

// jsonSyntaxError reports where and why a body is not strict JSON.
type jsonSyntaxError struct {
	Offset int
	Msg    string
}

func (e *jsonSyntaxError) Error() string {
	return "invalid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

func syntaxErr(off int, msg string) error { return &jsonSyntaxError{Offset: off, Msg: msg} }

// plainStringByte marks the bytes that may appear unescaped inside a JSON
// string and need no further attention: printable ASCII except '"' and '\\'.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipWS returns the index of the first byte at or after i that is not JSON
// insignificant whitespace.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// member is one "key": value pair of an object. The spans are byte offsets
// into the scanned buffer; the key span includes its quotes.
type member struct {
	keyStart, keyEnd int
	valStart, valEnd int
	keyEscaped       bool
	valEscaped       bool // the value is a string holding an escape
}

// keyIs reports whether the member's key equals name once unescaped.
func (m member) keyIs(b []byte, name string) bool {
	if !m.keyEscaped {
		return string(b[m.keyStart+1:m.keyEnd-1]) == name
	}
	s, ok := unquote(b[m.keyStart:m.keyEnd], true)
	return ok && s == name
}

// objIter walks the members of one object, validating each value fully.
// Create it with newObjIter at the object's '{'; call next until it returns
// false, then check err. On success end is the offset just past the '}'.
type objIter struct {
	b      []byte
	i      int
	depth  int
	first  bool
	done   bool
	end    int
	err    error
	count  int
	lastVE int // end of the last member value, or the offset after '{'
}

func newObjIter(b []byte, open, depth int) objIter {
	return objIter{b: b, i: open + 1, depth: depth, first: true, lastVE: open + 1}
}

func (it *objIter) fail(err error) bool {
	it.err = err
	it.done = true
	return false
}

// next scans the next member. It returns false at the end of the object or
// on a syntax error (then err is set).
func (it *objIter) next() (member, bool) {
	var m member
	if !it.nextInto(&m) {
		return member{}, false
	}
	return m, true
}

// nextInto is next writing the member into *m, which saves copying it on
// the decoder's hot path. *m is undefined when it returns false.
func (it *objIter) nextInto(m *member) bool {
	if !it.nextKeyInto(m) {
		return false
	}
	b := it.b
	var end int
	var err error
	if m.valStart < len(b) && b[m.valStart] == '"' {
		end, m.valEscaped, err = scanString(b, m.valStart)
	} else {
		end, err = scanValue(b, m.valStart, it.depth+1)
	}
	if err != nil {
		return it.fail(err)
	}
	it.valueEnd(m, end)
	return true
}

// nextKeyInto scans the key of the next member into *m, up to the start
// of its value (m.valStart). The caller scans the value and reports its end
// with valueEnd, or stops at a syntax error with fail. It returns false at
// the end of the object or on a syntax error (then err is set).
func (it *objIter) nextKeyInto(m *member) bool {
	if it.done {
		return false
	}
	b := it.b
	i := skipWS(b, it.i)
	if i >= len(b) {
		return it.fail(syntaxErr(i, "unterminated object"))
	}
	if it.first {
		it.first = false
		if b[i] == '}' {
			it.end, it.done = i+1, true
			return false
		}
	} else {
		switch b[i] {
		case '}':
			it.end, it.done = i+1, true
			return false
		case ',':
			i = skipWS(b, i+1)
		default:
			return it.fail(syntaxErr(i, "expected ',' or '}' after object value"))
		}
	}
	if i >= len(b) || b[i] != '"' {
		return it.fail(syntaxErr(i, "expected object key"))
	}
	end, esc, err := scanString(b, i)
	if err != nil {
		return it.fail(err)
	}
	m.keyStart, m.keyEnd, m.keyEscaped, m.valEscaped = i, end, esc, false
	i = skipWS(b, end)
	if i >= len(b) || b[i] != ':' {
		return it.fail(syntaxErr(i, "expected ':' after object key"))
	}
	m.valStart = skipWS(b, i+1)
	return true
}

// valueEnd completes the member whose key nextKeyInto scanned: its value ends
// just before end.
func (it *objIter) valueEnd(m *member, end int) {
	m.valEnd = end
	it.i, it.lastVE = end, end
	it.count++
}

// scanValue validates the JSON value starting exactly at b[i] and returns the
// offset just past it.
func scanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, syntaxErr(i, "unexpected end of input")
	}
	switch c := b[i]; c {
	case '"':
		end, _, err := scanString(b, i)
		return end, err
	case '{':
		if depth > maxJSONDepth {
			return i, syntaxErr(i, "nested too deeply")
		}
		it := newObjIter(b, i, depth)
		for {
			if _, ok := it.next(); !ok {
				break
			}
		}
		return it.end, it.err
	case '[':
		if depth > maxJSONDepth {
			return i, syntaxErr(i, "nested too deeply")
		}
		return scanArray(b, i, depth)
	case 't':
		return scanLiteral(b, i, "true")
	case 'f':
		return scanLiteral(b, i, "false")
	case 'n':
		return scanLiteral(b, i, "null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return scanNumber(b, i)
		}
		return i, syntaxErr(i, "invalid character "+strconv.QuoteRune(rune(c))+" looking for a value")
	}
}

func scanArray(b []byte, i, depth int) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := scanValue(b, i, depth+1)
		if err != nil {
			return end, err
		}
		i = skipWS(b, end)
		if i >= len(b) {
			return i, syntaxErr(i, "unterminated array")
		}
		switch b[i] {
		case ']':
			return i + 1, nil
		case ',':
			i = skipWS(b, i+1)
		default:
			return i, syntaxErr(i, "expected ',' or ']' after array element")
		}
	}
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, syntaxErr(i, "invalid literal")
	}
	return i + len(lit), nil
}

// scanNumber validates a JSON number starting at b[i].
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, syntaxErr(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return i, syntaxErr(start, "invalid number: no digit after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return i, syntaxErr(start, "invalid number: no digit in exponent")
		}
	}
	return i, nil
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanString validates the string starting at the '"' at b[i] and returns
// the offset just past its closing quote and whether it holds any escape.
// Raw bytes must be valid UTF-8 and control characters must be escaped.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	start := i
	i++
	for {
		// Eight plain bytes at a time (plainWord is exact when true), then
		// byte by byte up to the next byte that needs attention.
		for i+8 <= len(b) && plainWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && plainStringByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, escaped, syntaxErr(start, "unterminated string")
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return i, escaped, syntaxErr(start, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, escaped, syntaxErr(i, "invalid \\u escape")
				}
				i += 6
			default:
				return i, escaped, syntaxErr(i, "invalid escape")
			}
		case c < 0x20:
			return i, escaped, syntaxErr(i, "control character in string")
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, escaped, syntaxErr(i, "invalid UTF-8")
			}
			i += size
		}
	}
}

// scanTopObject validates that b is exactly one JSON object, optionally
// surrounded by whitespace, and returns the offsets of its '{' and of the
// byte just past its '}'.
func scanTopObject(b []byte) (open, end int, err error) {
	open = skipWS(b, 0)
	if open >= len(b) {
		return 0, 0, syntaxErr(open, "empty body")
	}
	if b[open] != '{' {
		// A syntax error in a non-object body is reported as such; a
		// well-formed one is still not an object.
		if _, err = scanValue(b, open, 1); err != nil {
			return 0, 0, err
		}
		return 0, 0, syntaxErr(open, "not a JSON object")
	}
	end, err = scanValue(b, open, 1)
	if err != nil {
		return 0, 0, err
	}
	if t := skipWS(b, end); t != len(b) {
		return 0, 0, syntaxErr(t, "data after the top-level value")
	}
	return open, end, nil
}

// unquote returns the value of the validated JSON string token tok (quotes
// included). escaped says whether the token holds a backslash; without one
// the bytes between the quotes are the value.
func unquote(tok []byte, escaped bool) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", false
	}
	if !escaped {
		return string(tok[1 : len(tok)-1]), true
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", false
	}
	return s, true
}

// parseUint31 parses a validated JSON number token that must be a plain
// non-negative integer ("0" or digits without a leading zero) of at most
// MaxAttemptsValue.
func parseUint31(tok []byte) (int, bool) {
	if len(tok) == 0 || (tok[0] == '0' && len(tok) > 1) {
		return 0, false
	}
	n := 0
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
		if n > MaxAttemptsValue {
			return 0, false
		}
	}
	return n, true
}

// parseInt64 parses a validated JSON number token that must be an integer
// (optional '-', digits, no fraction or exponent) fitting an int64.
func parseInt64(tok []byte) (int64, bool) {
	for i, c := range tok {
		if (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return 0, false
		}
	}
	if digits := tok; len(digits) > 0 && len(digits) <= 18 && digits[0] != '-' {
		// At most 18 digits always fit: no overflow check needed.
		var n int64
		for _, c := range digits {
			n = n*10 + int64(c-'0')
		}
		return n, true
	}
	n, err := strconv.ParseInt(string(tok), 10, 64)
	return n, err == nil
}
