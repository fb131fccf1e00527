package wire

import (
	"bytes"
	"encoding/base64"
	"unicode/utf8"
)

// PoisonBody returns the dead-letter body of a poison message, byte for
// byte as the Python SDK builds it for the same body and block. dl.Reason
// is forced to ReasonPoison (CONTRACT.md 4.2).
//
//   - A body that is one strict JSON object (valid UTF-8) with no top-level
//     dead_letter member and no unpaired surrogate escape (\ud800 not
//     followed by a low-surrogate escape, or a lone low one) is spliced:
//     the whitespace around the object is dropped and `,"dead_letter":{...}`
//     goes right before its closing '}' (an empty object becomes
//     {"dead_letter":{...}}). Every other byte stays; attempts is not
//     touched.
//   - Any other body is wrapped as {"raw":<body as a JSON string>,
//     "dead_letter":{...}}; a body that is not valid UTF-8 is wrapped as
//     {"raw":<standard base64 of body>,"raw_encoding":"base64",
//     "dead_letter":{...}}. The keys come in that order. An object that
//     already has a dead_letter member is wrapped too, so its old block
//     (the reason it was dead-lettered before) is kept inside raw.
func PoisonBody(body []byte, dl DeadLetter) []byte {
	dl.Reason = ReasonPoison
	if l, err := locateTop(body, "dead_letter"); err == nil && !l.found && !hasUnpairedSurrogateEscape(body[l.open:l.end]) {
		obj := body[l.open:l.end]
		out := make([]byte, 0, len(obj)+200)
		if l.count == 0 {
			out = append(out, '{')
		} else {
			out = append(out, obj[:len(obj)-1]...)
			out = append(out, ',')
		}
		out = append(out, `"dead_letter":`...)
		out = appendDeadLetter(out, dl, nil)
		return append(out, '}')
	}
	out := make([]byte, 0, len(body)+len(body)/3+200)
	out = append(out, `{"raw":`...)
	if utf8.Valid(body) {
		out = appendJSONString(out, string(body))
	} else {
		out = append(out, '"')
		out = base64.StdEncoding.AppendEncode(out, body)
		out = append(out, `","raw_encoding":"base64"`...)
	}
	out = append(out, `,"dead_letter":`...)
	out = appendDeadLetter(out, dl, nil)
	return append(out, '}')
}

// hasUnpairedSurrogateEscape reports whether a string literal (key or
// value) of the validated JSON text b holds a \uD800-\uDBFF escape that
// the next escape of the literal does not pair with a \uDC00-\uDFFF one,
// or such a low escape without a high one before it. Only escapes count,
// as in the Python SDK: raw characters between two escapes do not break a
// pair.
func hasUnpairedSurrogateEscape(b []byte) bool {
	if !bytes.Contains(b, []byte(`\u`)) {
		return false
	}
	inString, pendingHigh := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			if pendingHigh {
				return true
			}
			inString = false
		case c == '\\':
			code := -1
			if b[i+1] == 'u' { // validated: four hex digits follow
				code = hexValue(b[i+2 : i+6])
				i += 4
			}
			i++
			high := code >= 0xd800 && code <= 0xdbff
			low := code >= 0xdc00 && code <= 0xdfff
			if pendingHigh != low {
				return true
			}
			pendingHigh = high
		}
	}
	return false
}

// hexValue returns the value of validated hexadecimal digits.
func hexValue(h []byte) int {
	n := 0
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		n = n<<4 | int(c)
	}
	return n
}
