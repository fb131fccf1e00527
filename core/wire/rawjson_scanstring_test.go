package wire

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// TestScanStringEveryOffsetMatchesEncodingJSON puts a byte that needs
// attention at every offset of strings long enough for the 8-byte path,
// and checks scanString's verdict (encoding/json's, plus valid UTF-8), end
// and escape flag.
func TestScanStringEveryOffsetMatchesEncodingJSON(t *testing.T) {
	specials := []string{`\"`, `\\`, `\n`, `\u00e9`, "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff", "\xc3", `\x`, `\u12`}
	for _, sp := range specials {
		for pre := range 20 {
			for post := range 12 {
				s := `"` + string(bytes.Repeat([]byte{'a'}, pre)) + sp + string(bytes.Repeat([]byte{'z'}, post)) + `"`
				b := []byte(s + `,"tail"`)
				end, esc, err := scanString(b, 0)
				// The scanner also requires valid UTF-8, which encoding/json
				// does not.
				valid := json.Valid([]byte(s)) && utf8.ValidString(s)
				if (err == nil) != valid {
					t.Fatalf("scanString(%q) err = %v, encoding/json valid = %v", s, err, valid)
				}
				if err != nil {
					continue
				}
				if end != len(s) {
					t.Fatalf("scanString(%q) end = %d, want %d", s, end, len(s))
				}
				if want := bytes.IndexByte([]byte(s[1:len(s)-1]), '\\') >= 0; esc != want {
					t.Fatalf("scanString(%q) escaped = %v, want %v", s, esc, want)
				}
			}
		}
	}
}
