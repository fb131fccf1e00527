package wire

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// plain8 is plainWord of the first 8 bytes of s.
func plain8(s string) bool {
	var x uint64
	for i := range 8 {
		x |= uint64(s[i]) << (8 * i)
	}
	return plainWord(x)
}

func plain8Reference(s string) bool {
	for i := range 8 {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// TestPlain8NeverMissesAByteToEscape checks the 8-byte test against the
// byte-wise rule: every byte value at every position among plain bytes,
// and random words mixing plain and special bytes.
func TestPlain8NeverMissesAByteToEscape(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			for _, fill := range []byte{' ', 'a', '~', 0x7f, '!', '#', '[', ']'} {
				b := bytes.Repeat([]byte{fill}, 8)
				b[pos] = byte(c)
				if got, want := plain8(string(b)), plain8Reference(string(b)); got != want {
					t.Fatalf("plain8(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	special := []byte{0, 0x1f, 0x20, 0x21, '"', '\\', 0x7f, 0x80, 0xff, 0x5b, 0x5d, 0x23}
	b := make([]byte, 8)
	for range 200000 {
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = special[r.IntN(len(special))]
			} else {
				b[i] = byte(r.IntN(256))
			}
		}
		if got, want := plain8(string(b)), plain8Reference(string(b)); got && !want {
			t.Fatalf("plain8(%q) = true, want false", b)
		}
	}
}

// TestAppendJSONStringEveryOffsetMatchesEncodingJSON compares the writer with
// encoding/json (HTML escaping off) on strings long enough for the 8-byte
// path, special bytes at every offset.
func TestAppendJSONStringEveryOffsetMatchesEncodingJSON(t *testing.T) {
	specials := []string{"\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff", "<&>", "\U0001F600"}
	for _, sp := range specials {
		for pre := range 20 {
			for post := range 12 {
				checkAppendJSONString(t, string(bytes.Repeat([]byte{'a'}, pre))+sp+string(bytes.Repeat([]byte{'z'}, post)))
			}
		}
	}
}

// FuzzAppendJSONString compares the writer with encoding/json (HTML
// escaping off) on any bytes, invalid UTF-8 included.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain ascii words!", "0123456789abcdef\"x", "tab\there and\\there", "é\u2028\xff<&>", "\x00\x1f\x7f\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAppendJSONString(t, s)
	})
}

// checkAppendJSONString fails t unless appendJSONString writes s as
// encoding/json does with HTML escaping off, U+2028 and U+2029 raw.
func checkAppendJSONString(t *testing.T, s string) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	want := appendUnescapedSeparators(nil, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("appendJSONString(%q) = %s, encoding/json (separators raw) = %s", s, got, want)
	}
}
