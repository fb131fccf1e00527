package wire

// BodyAttempts returns the top-level attempts of a JSON object body, and
// whether there is one that is a plain integer between 0 and
// MaxAttemptsValue. The last member wins when the key repeats, as
// encoding/json reads it. It is the one reading of a body's attempts that
// the App and the bindings share.
//
// It looks first at the end of the body: every SDK writes attempts as the
// last member, and in valid JSON a final `"attempts":<digits>}` can only
// be that member. Otherwise it walks the top-level members without
// decoding the values. It never decodes the body, so a malformed body may
// be read as holding attempts; SetAttempts refuses to edit such a body.
//
// It takes the body as bytes or as a string; a string body is copied only
// when the end does not tell.
func BodyAttempts[B ~string | ~[]byte](body B) (int, bool) {
	if n, ok := trailingAttempts(body); ok {
		return n, true
	}
	return walkAttempts([]byte(body))
}

// walkAttempts reads the attempts of body by walking its top-level
// members.
func walkAttempts(body []byte) (int, bool) {
	open := skipWS(body, 0)
	if open >= len(body) || body[open] != '{' {
		return 0, false
	}
	n, found := 0, false
	it := newObjIter(body, open, 1)
	for {
		m, ok := it.next()
		if !ok {
			return n, found
		}
		if string(keyBytes(body, m)) == keyAttempts {
			n, found = parseUint31(body[m.valStart:m.valEnd])
		}
	}
}

// trailingAttempts reads a body that ends with `"attempts":<digits>}`,
// blanks allowed around the colon, the digits and the brace.
func trailingAttempts[B ~string | ~[]byte](body B) (int, bool) {
	i := len(body) - 1
	for i >= 0 && isBlankByte(body[i]) {
		i--
	}
	if i < 0 || body[i] != '}' {
		return 0, false
	}
	i--
	for i >= 0 && isBlankByte(body[i]) {
		i--
	}
	end := i + 1
	for i >= 0 && body[i] >= '0' && body[i] <= '9' {
		i--
	}
	start := i + 1
	if start == end {
		return 0, false
	}
	for i >= 0 && isBlankByte(body[i]) {
		i--
	}
	if i < 0 || body[i] != ':' {
		return 0, false
	}
	i--
	for i >= 0 && isBlankByte(body[i]) {
		i--
	}
	const key = `"attempts"`
	if i+1 < len(key) || string(body[i+1-len(key):i+1]) != key {
		return 0, false
	}
	// The key must open a member: a comma or the object's brace before it,
	// not the end of a longer string such as "x\"attempts".
	j := i - len(key)
	for j >= 0 && isBlankByte(body[j]) {
		j--
	}
	if j < 0 || (body[j] != ',' && body[j] != '{') {
		return 0, false
	}
	return parseDigits31(body[start:end])
}

// parseDigits31 is parseUint31 for a run of ASCII digits.
func parseDigits31[B ~string | ~[]byte](digits B) (int, bool) {
	if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		n = n*10 + int(digits[i]-'0')
		if n > MaxAttemptsValue {
			return 0, false
		}
	}
	return n, true
}

func isBlankByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
