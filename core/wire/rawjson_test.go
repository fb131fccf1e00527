package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// strictValid is the reference for the scanner: encoding/json syntax plus
// valid UTF-8 (encoding/json alone accepts invalid UTF-8 in strings).
func strictValid(b []byte) bool { return json.Valid(b) && utf8.Valid(b) }

var scannerCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-1E-2`, `true`, `false`, `null`,
	` { "a" : [ 1 , { } , [ ] , "x" ] } `, `{"a":{"b":{"c":[null,true,false]}}}`,
	`"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"`, `"\ud800"`, `"é😀"`,
	`01`, `1.`, `.5`, `1e`, `1e+`, `-`, `--1`, `+1`, `0x10`, `NaN`, `Infinity`, `1.5.5`,
	`{`, `}`, `[`, `]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a" 1}`, `{1:2}`,
	`{'a':1}`, `"abc`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\tb\"", "\"\x00\"", "\"\x7f\"",
	`tru`, `truex`, `nul`, `[1 2]`, `{"a":1 "b":2}`, `1 2`, ``, ` `, "\ufeff{}",
	"\"\xff\"", "\"\xc3\x28\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "{\"\xe2\x82\":1}",
	"[1,\n2,\r\n3]\t", `[[[[[[[[[[]]]]]]]]]]`, `{"a":[{"b":[{"c":{}}]}]}`,
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	for _, c := range scannerCases {
		b := []byte(c)
		i := skipWS(b, 0)
		end, err := scanValue(b, i, 1)
		ok := err == nil && skipWS(b, end) == len(b)
		if want := strictValid(b); ok != want {
			t.Errorf("scan(%q) ok=%v (err %v), encoding/json+utf8 says %v", c, ok, err, want)
		}
	}
}

func TestScanTopObject(t *testing.T) {
	for _, c := range scannerCases {
		b := []byte(c)
		_, _, err := scanTopObject(b)
		want := strictValid(b) && strings.HasPrefix(strings.TrimLeft(c, " \t\r\n"), "{")
		if (err == nil) != want {
			t.Errorf("scanTopObject(%q) err = %v, want ok=%v", c, err, want)
		}
	}
}

func TestScannerDepthLimit(t *testing.T) {
	ok := strings.Repeat("[", maxJSONDepth-1) + strings.Repeat("]", maxJSONDepth-1)
	if _, err := scanValue([]byte(ok), 0, 1); err != nil {
		t.Fatalf("depth %d rejected: %v", maxJSONDepth-1, err)
	}
	deep := strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1)
	if _, err := scanValue([]byte(deep), 0, 1); err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("depth %d: err = %v", maxJSONDepth+1, err)
	}
}

func TestObjIterSpans(t *testing.T) {
	b := []byte(` { "a" : 1 , "b\"":[2, 3],"c":{"d":"e"} } `)
	it := newObjIter(b, 1, 1)
	var got []string
	for {
		m, ok := it.next()
		if !ok {
			break
		}
		got = append(got, string(b[m.keyStart:m.keyEnd])+"="+string(b[m.valStart:m.valEnd]))
	}
	if it.err != nil {
		t.Fatal(it.err)
	}
	want := []string{`"a"=1`, `"b\""=[2, 3]`, `"c"={"d":"e"}`}
	if strings.Join(got, "|") != strings.Join(want, "|") || it.end != len(b)-1 || it.count != 3 {
		t.Fatalf("members %q end %d count %d", got, it.end, it.count)
	}
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	inputs := []string{
		"", "plain", `quote " and \ backslash`, "<html> & 'x'", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
		"é 😀 \u00a0 \u3000", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80", strings.Repeat("ab", 100),
	}
	for _, s := range inputs {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := string(appendUnescapedSeparators(nil, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
		if got := string(appendJSONString(nil, s)); got != want {
			t.Errorf("appendJSONString(%q) = %s, encoding/json (separators raw) = %s", s, got, want)
		}
	}
}

func TestUnquote(t *testing.T) {
	tests := []struct {
		tok, want string
		ok        bool
	}{
		{`"abc"`, "abc", true},
		{`"a\nb\u0041\ud83d\ude00"`, "a\nbA😀", true},
		{`"`, "", false},
		{`abc`, "", false},
	}
	for _, tt := range tests {
		got, ok := unquote([]byte(tt.tok), strings.Contains(tt.tok, `\`))
		if got != tt.want || ok != tt.ok {
			t.Errorf("unquote(%s) = %q, %v", tt.tok, got, ok)
		}
	}
}

func TestParseIntegers(t *testing.T) {
	u31 := map[string]int{"0": 0, "7": 7, "2147483647": 2147483647}
	for s, want := range u31 {
		if n, ok := parseUint31([]byte(s)); !ok || n != want {
			t.Errorf("parseUint31(%s) = %d, %v", s, n, ok)
		}
	}
	for _, s := range []string{"", "-1", "-0", "01", "1.0", "1e2", "2147483648", "99999999999999999999"} {
		if _, ok := parseUint31([]byte(s)); ok {
			t.Errorf("parseUint31(%s) accepted", s)
		}
	}
	i64 := map[string]int64{"0": 0, "-5": -5, "9223372036854775807": 9223372036854775807}
	for s, want := range i64 {
		if n, ok := parseInt64([]byte(s)); !ok || n != want {
			t.Errorf("parseInt64(%s) = %d, %v", s, n, ok)
		}
	}
	for _, s := range []string{"", "1.5", "1e3", "9223372036854775808", "--1", "1-"} {
		if _, ok := parseInt64([]byte(s)); ok {
			t.Errorf("parseInt64(%s) accepted", s)
		}
	}
}

// referenceTree decodes s with encoding/json and UseNumber.
func referenceTree(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return v
}

func TestTreeOfMatchesEncodingJSON(t *testing.T) {
	extra := []string{
		`{"a":{"a":1},"a":[1,{"b":null}],"c":"x\"y","d":-0.5e+3,"e":true,"f":false,"g":[],"h":{}}`,
		` [ 1 , "two" , [ [ ] ] , { "k" : "\u00e9\ud83d\ude00\ud800" } ] `,
		`{"big":12345678901234567890,"neg":-12345678901234567890.25}`,
		`"\\\""`, `"a\\"`,
	}
	for _, c := range append(append([]string{}, scannerCases...), extra...) {
		if !strictValid([]byte(c)) {
			continue
		}
		got, want := treeOf(c), referenceTree(t, c)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("treeOf(%q) = %#v, encoding/json = %#v", c, got, want)
		}
	}
}
