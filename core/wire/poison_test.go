package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

func TestPoisonBody(t *testing.T) {
	dl := DeadLetter{Reason: ReasonFailed /* forced to poison */, Error: strp("not an envelope"), FailedAt: 42, OriginalQueue: "orders", Attempts: 1}
	const block = `{"reason":"poison","error":"not an envelope","exception":null,"failed_at":42,"original_queue":"orders","attempts":1,"lang":"go"}`
	tests := []struct {
		name, body, want string
	}{
		{"object missing fields keeps bytes", ` {"job": "", "attempts":"x" } `, `{"job": "", "attempts":"x" ,"dead_letter":` + block + `}`},
		{"empty object", `{}`, `{"dead_letter":` + block + `}`},
		{"object with a dead_letter wrapped", `{"dead_letter":{"k":1},"a":1}`, `{"raw":"{\"dead_letter\":{\"k\":1},\"a\":1}","dead_letter":` + block + `}`},
		{"unpaired surrogate escape wrapped", `{"a":"\ud800"}`, `{"raw":"{\"a\":\"\\ud800\"}","dead_letter":` + block + `}`},
		{"array wrapped", `[1,2]`, `{"raw":"[1,2]","dead_letter":` + block + `}`},
		{"text wrapped", "not json <&> \"q\"\n", `{"raw":"not json <&> \"q\"\n","dead_letter":` + block + `}`},
		{"empty wrapped", ``, `{"raw":"","dead_letter":` + block + `}`},
		{"truncated object wrapped", `{"a":1`, `{"raw":"{\"a\":1","dead_letter":` + block + `}`},
		{"unicode text wrapped", "héllo\u2028\u2029", "{\"raw\":\"héllo\u2028\u2029\",\"dead_letter\":" + block + `}`},
		{"invalid utf8 base64", "ab\xff\xfe", `{"raw":"` + base64.StdEncoding.EncodeToString([]byte("ab\xff\xfe")) + `","raw_encoding":"base64","dead_letter":` + block + `}`},
		{"object with invalid utf8 base64", "{\"a\":\"\xc3\"}", `{"raw":"` + base64.StdEncoding.EncodeToString([]byte("{\"a\":\"\xc3\"}")) + `","raw_encoding":"base64","dead_letter":` + block + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PoisonBody([]byte(tt.body), dl)
			if string(got) != tt.want {
				t.Fatalf("PoisonBody =\n%s\nwant\n%s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Fatal("not valid JSON")
			}
			back, ok := DeadLetterOf(got)
			if !ok || back.Reason != ReasonPoison {
				t.Fatalf("DeadLetterOf = %+v, %v", back, ok)
			}
		})
	}
}

// TestPoisonBodyWrappedRawRoundTrips checks that the raw member gives back
// the original body for both wrapped shapes.
func TestPoisonBodyWrappedRawRoundTrips(t *testing.T) {
	for _, body := range [][]byte{[]byte("plain text"), []byte("\x00\x01\xff binary"), []byte(`"just a string"`), []byte("\u2029<tag>")} {
		out := PoisonBody(body, DeadLetter{})
		var w struct {
			Raw         string          `json:"raw"`
			RawEncoding string          `json:"raw_encoding"`
			DeadLetter  json.RawMessage `json:"dead_letter"`
		}
		if err := json.Unmarshal(out, &w); err != nil {
			t.Fatal(err)
		}
		got := []byte(w.Raw)
		if w.RawEncoding == "base64" {
			var err error
			if got, err = base64.StdEncoding.DecodeString(w.Raw); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("raw %q does not give back %q", w.Raw, body)
		}
	}
}
