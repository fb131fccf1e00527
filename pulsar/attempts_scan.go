package pulsar

import (
	"bytes"
	"encoding/json"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// integerAttempts returns the top-level attempts of a JSON object body when
// it is a non-negative integer written as plain digits, the last one when
// the key repeats. It scans the bytes without decoding them (DESIGN.md,
// section 2); babelqueue.SetAttempts refuses a malformed body it accepts.
func integerAttempts(body []byte) (int, bool) {
	if n, ok := trailingAttempts(body); ok {
		return n, true
	}
	s := scanner{b: body}
	s.space()
	if !s.eat('{') {
		return 0, false
	}
	n, found := 0, false
	s.space()
	if s.eat('}') {
		return 0, false
	}
	for {
		s.space()
		key, ok := s.key()
		if !ok {
			return 0, false
		}
		s.space()
		if !s.eat(':') {
			return 0, false
		}
		s.space()
		start := s.i
		if !s.skipValue(0) {
			return 0, false
		}
		if string(key) == "attempts" {
			n, found = babelqueue.ParseAttemptsHeader(string(body[start:s.i]))
		}
		s.space()
		if s.eat('}') {
			return n, found
		}
		if !s.eat(',') {
			return 0, false
		}
	}
}

// trailingAttempts reads the attempts of a body that ends the way the
// contract's encoders end it, with "attempts":<digits>}, without scanning
// the rest: in valid JSON those bytes are the last top-level member.
func trailingAttempts(body []byte) (int, bool) {
	const key = `"attempts":`
	end := len(body) - 1
	if end < 0 || body[end] != '}' {
		return 0, false
	}
	i := end
	for i > 0 && body[i-1] >= '0' && body[i-1] <= '9' {
		i--
	}
	if i == end || i < len(key) || string(body[i-len(key):i]) != key {
		return 0, false
	}
	return babelqueue.ParseAttemptsHeader(string(body[i:end]))
}

// maxScanDepth bounds the nesting skipValue follows.
const maxScanDepth = 512

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// key reads a string and returns its value; escaped keys are unquoted.
func (s *scanner) key() ([]byte, bool) {
	start := s.i
	escaped, ok := s.skipString()
	if !ok {
		return nil, false
	}
	raw := s.b[start:s.i]
	if !escaped {
		return raw[1 : len(raw)-1], true
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		return nil, false
	}
	return []byte(k), true
}

// skipString moves past a string starting at s.i.
func (s *scanner) skipString() (escaped, ok bool) {
	if !s.eat('"') {
		return false, false
	}
	// Most strings hold no escape: find the closing quote at once.
	if j := bytes.IndexByte(s.b[s.i:], '"'); j >= 0 && bytes.IndexByte(s.b[s.i:s.i+j], '\\') < 0 {
		s.i += j + 1
		return false, true
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			s.i++
			return escaped, true
		case '\\':
			escaped = true
			s.i += 2
		default:
			s.i++
		}
	}
	return false, false
}

// skipValue moves past one JSON value starting at s.i.
func (s *scanner) skipValue(depth int) bool {
	if s.i >= len(s.b) || depth > maxScanDepth {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, ok := s.skipString()
		return ok
	case '{', '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		s.i++
		s.space()
		if s.eat(closer) {
			return true
		}
		for {
			s.space()
			if c == '{' {
				if _, ok := s.skipString(); !ok {
					return false
				}
				s.space()
				if !s.eat(':') {
					return false
				}
				s.space()
			}
			if !s.skipValue(depth + 1) {
				return false
			}
			s.space()
			if s.eat(closer) {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	default:
		// number, true, false, null: up to the next delimiter.
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}
