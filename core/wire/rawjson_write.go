package wire

import (
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way the other SDKs write
// one (Python's json.dumps with ensure_ascii=False, Node's JSON.stringify):
// '"', '\\' and control characters are escaped, invalid UTF-8 becomes
// U+FFFD, and every other character is written as is, '<', '>', '&',
// U+2028 and U+2029 included (encoding/json escapes the last two).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for ; i+8 <= len(s); i += 8 {
			w := s[i : i+8]
			if !plainWord(uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56) {
				break
			}
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plainWord reports whether none of the 8 bytes of x (a word of a
// string) needs escaping or UTF-8 decoding: each is in [0x20, 0x7f] and is
// neither '"' nor '\\'. The byte tests have no false negatives, so a true
// is exact; a false only sends the bytes to the byte loop.
func plainWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	below := (x - ones*0x20) &^ x                              // a byte < 0x20
	zeros := (quote-ones)&^quote | (backslash-ones)&^backslash // a '"' or '\\'
	return (below|zeros|x)&highs == 0                          // x&highs: a byte >= 0x80
}

// appendNullableString appends *s as a JSON string, or null when s is nil.
func appendNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, *s)
}

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }
