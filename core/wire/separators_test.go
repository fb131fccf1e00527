package wire

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The SDKs write U+2028 (LINE SEPARATOR) and U+2029 (PARAGRAPH SEPARATOR)
// as raw characters: Python's json.dumps(..., ensure_ascii=False) and
// Node's JSON.stringify do, encoding/json does not. These tests pin the
// raw form on every path that writes JSON.

const (
	ls = "\u2028" // raw UTF-8: e2 80 a8
	ps = "\u2029" // raw UTF-8: e2 80 a9
)

// hasSeparatorEscape reports whether b holds the text \u2028 or \u2029
// (backslash included).
func hasSeparatorEscape(b []byte) bool {
	return bytes.Contains(b, []byte(`\u2028`)) || bytes.Contains(b, []byte(`\u2029`))
}

func TestAppendJSONStringWritesSeparatorsRaw(t *testing.T) {
	for s, want := range map[string]string{
		ls:                        `"` + ls + `"`,
		"a" + ls + "b" + ps + "c": `"a` + ls + `b` + ps + `c"`,
		strings.Repeat("x", 9) + ps + strings.Repeat("y", 9): `"` + strings.Repeat("x", 9) + ps + strings.Repeat("y", 9) + `"`,
		"\u2027\u202a":  "\"\u2027\u202a\"",       // neighbours stay raw as before
		`\u2028` + "\n": `"\\u2028\n"`,            // a backslash typed by the user stays escaped
		ls + "\x01\"\\": `"` + ls + `\u0001\"\\"`, // the other escapes are unchanged
		"\xe2\x80" + ls: `"\ufffd\ufffd` + ls + `"`,
	} {
		if got := string(appendJSONString(nil, s)); got != want {
			t.Errorf("appendJSONString(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestAppendUnescapedSeparators(t *testing.T) {
	for src, want := range map[string]string{
		`{}`:                            `{}`,
		`{"a":"\u2028"}`:                `{"a":"` + ls + `"}`,
		`{"\u2029":"x\u2028y\u2029"}`:   `{"` + ps + `":"x` + ls + `y` + ps + `"}`,
		`{"a":"\\u2028"}`:               `{"a":"\\u2028"}`, // an escaped backslash, then text
		`{"a":"\\\u2028"}`:              `{"a":"\\` + ls + `"}`,
		`{"a":"\u20289\u202a\u2027\""}`: `{"a":"` + ls + `9\u202a\u2027\""}`,
		`{"a":"\u00e9\n"}`:              `{"a":"\u00e9\n"}`,
	} {
		if got := string(appendUnescapedSeparators([]byte("p:"), []byte(src))); got != "p:"+want {
			t.Errorf("appendUnescapedSeparators(%s) = %s, want p:%s", src, got, want)
		}
	}
}

type separatorData struct {
	Note string            `json:"note"`
	Tags map[string]string `json:"tags"`
}

// TestMakeWritesSeparatorsRaw checks a new envelope: the envelope strings
// and data from every encoder path (the map fast path, encoding/json for
// structs and other maps) carry the separators raw.
func TestMakeWritesSeparatorsRaw(t *testing.T) {
	at := time.UnixMilli(1749132727000)
	for name, tc := range map[string]struct {
		data     any
		wantData string
	}{
		"map fast path":     {map[string]any{"n": "a" + ls + "b", ps: []any{ps}}, `{"n":"a` + ls + `b","` + ps + `":["` + ps + `"]}`},
		"string map":        {map[string]string{"k" + ls: ps}, `{"k` + ls + `":"` + ps + `"}`},
		"struct":            {separatorData{Note: "x" + ls + "y" + ps, Tags: map[string]string{ps: ls}}, `{"note":"x` + ls + `y` + ps + `","tags":{"` + ps + `":"` + ls + `"}}`},
		"int map":           {map[string]int{"k" + ls: 1}, `{"k` + ls + `":1}`},
		"struct backslash":  {separatorData{Note: `\u2028`}, `{"note":"\\u2028","tags":null}`},
		"raw bytes kept":    {[]byte(`{"a":"\u2028"}`), `{"a":"\u2028"}`}, // the caller's bytes are not re-encoded
		"raw bytes compact": {[]byte(`{ "a" : "` + ls + `" }`), `{"a":"` + ls + `"}`},
	} {
		t.Run(name, func(t *testing.T) {
			env, err := Make("urn:babel:t"+ls, tc.data, WithID("id"+ps), WithTraceID("tr"+ls), WithQueue("q"+ps), WithCreatedAt(at))
			if err != nil {
				t.Fatal(err)
			}
			got, err := env.Encode()
			if err != nil {
				t.Fatal(err)
			}
			want := `{"job":"urn:babel:t` + ls + `","trace_id":"tr` + ls + `","data":` + tc.wantData +
				`,"meta":{"id":"id` + ps + `","queue":"q` + ps + `","lang":"go","schema_version":1,"created_at":1749132727000},"attempts":0}`
			if string(got) != want {
				t.Fatalf("Encode =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestDeadLetterWritesSeparatorsRaw covers the re-encode paths: a retry's
// attempts edit, a dead letter's block and a poison record.
func TestDeadLetterWritesSeparatorsRaw(t *testing.T) {
	body := []byte(`{"job":"urn:x","trace_id":"t","data":{"s":"` + ls + `","e":"\u2029"},"meta":{"schema_version":1},"attempts":0}`)
	retry, err := SetAttempts(body, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Replace(body, []byte(`"attempts":0`), []byte(`"attempts":1`), 1); !bytes.Equal(retry, want) {
		t.Fatalf("SetAttempts = %s, want %s", retry, want)
	}
	msg := "boom" + ls + "line" + ps
	dl := DeadLetter{Reason: ReasonFailed, Error: &msg, Exception: &msg, FailedAt: 1, OriginalQueue: "q" + ls, Attempts: 3}
	got, err := AnnotateDeadLetter(body, dl)
	if err != nil {
		t.Fatal(err)
	}
	want := string(body[:len(body)-len(`0}`)]) + `3,"dead_letter":{"reason":"failed","error":"` + msg + `","exception":"` + msg +
		`","failed_at":1,"original_queue":"q` + ls + `","attempts":3,"lang":"go"}}`
	if string(got) != want {
		t.Fatalf("AnnotateDeadLetter =\n%s\nwant\n%s", got, want)
	}
	// The original body's own escape (\u2029 in data) is its bytes: kept.
	if !bytes.Contains(got, []byte(`"e":"\u2029"`)) {
		t.Fatalf("the original's escape was rewritten: %s", got)
	}
	poison := PoisonBody([]byte("text"+ls+ps), dl)
	if hasSeparatorEscape(poison) {
		t.Fatalf("PoisonBody escaped a separator: %s", poison)
	}
	if !bytes.HasPrefix(poison, []byte(`{"raw":"text`+ls+ps+`","dead_letter":{"reason":"poison","error":"`+msg+`"`)) {
		t.Fatalf("PoisonBody = %s", poison)
	}
}
