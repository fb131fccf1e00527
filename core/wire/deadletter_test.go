package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestSetAttempts(t *testing.T) {
	tests := []struct {
		name, body string
		n          int
		want       string
	}{
		{"replace", `{"a":1,"attempts":0,"z":2}`, 3, `{"a":1,"attempts":3,"z":2}`},
		{"replace keeps spacing", "{ \"attempts\" :\t7 , \"z\" : [ 1 ] }", 12, "{ \"attempts\" :\t12 , \"z\" : [ 1 ] }"},
		{"replace non-integer value", `{"attempts":"x"}`, 1, `{"attempts":1}`},
		{"same value", `{"attempts":2}`, 2, `{"attempts":2}`},
		{"missing key appended", `{"job":"u","data":{}}`, 1, `{"job":"u","data":{},"attempts":1}`},
		{"missing key before trailing space", "{\"job\":\"u\" \n}\n", 1, "{\"job\":\"u\",\"attempts\":1 \n}\n"},
		{"empty object", `{ }`, 0, `{"attempts":0 }`},
		{"nested attempts untouched", `{"data":{"attempts":9},"attempts":1}`, 2, `{"data":{"attempts":9},"attempts":2}`},
		{"duplicate: last changes", `{"attempts":1,"x":0,"attempts":1}`, 5, `{"attempts":1,"x":0,"attempts":5}`},
		{"escaped key matches", `{"att\u0065mpts":1}`, 4, `{"att\u0065mpts":4}`},
		{"max", `{"attempts":0}`, MaxAttemptsValue, `{"attempts":2147483647}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.body)
			got, err := SetAttempts(in, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("SetAttempts = %s, want %s", got, tt.want)
			}
			if string(in) != tt.body {
				t.Fatal("SetAttempts modified its input")
			}
		})
	}
}

func TestSetAttemptsErrors(t *testing.T) {
	for _, body := range []string{``, `[]`, `"x"`, `{"a":}`, `{"a":1} x`, "{\"a\":\"\xff\"}", `nul`} {
		if _, err := SetAttempts([]byte(body), 1); !errors.Is(err, ErrPoison) {
			t.Errorf("SetAttempts(%q) err = %v, want ErrPoison", body, err)
		}
	}
	for _, n := range []int{-1, MaxAttemptsValue + 1} {
		if _, err := SetAttempts([]byte(`{}`), n); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("SetAttempts(%d) err = %v, want ErrInvalidEnvelope", n, err)
		}
	}
}

func strp(s string) *string { return &s }

func TestAnnotateDeadLetter(t *testing.T) {
	dl := DeadLetter{Reason: ReasonFailed, Error: strp(`bad "thing" <x>`), Exception: strp("*errors.errorString"),
		FailedAt: 1749132727123, OriginalQueue: "orders", Attempts: 3}
	const block = `{"reason":"failed","error":"bad \"thing\" <x>","exception":"*errors.errorString","failed_at":1749132727123,"original_queue":"orders","attempts":3,"lang":"go"}`
	tests := []struct {
		name, body, want string
	}{
		{"appended",
			` {"job":"u", "attempts" : 2 ,"x":[1]} `,
			` {"job":"u", "attempts" : 3 ,"x":[1],"dead_letter":` + block + `} `},
		{"replaced in place, unknown keys kept",
			`{"job":"u","dead_letter":{"hint":"h","reason":"poison","attempts":1,"n":[1, 2]},"attempts":1,"z":true}`,
			`{"job":"u","dead_letter":` + strings.TrimSuffix(block, "}") + `,"hint":"h","n":[1, 2]},"attempts":3,"z":true}`},
		{"non-object dead_letter replaced",
			`{"dead_letter":null,"attempts":0}`,
			`{"dead_letter":` + block + `,"attempts":3}`},
		{"attempts missing: added before dead_letter",
			`{"job":"u"}`,
			`{"job":"u","attempts":3,"dead_letter":` + block + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AnnotateDeadLetter([]byte(tt.body), dl)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("AnnotateDeadLetter =\n%s\nwant\n%s", got, tt.want)
			}
			back, ok := DeadLetterOf(got)
			if !ok || back.Reason != dl.Reason || *back.Error != *dl.Error || *back.Exception != *dl.Exception ||
				back.FailedAt != dl.FailedAt || back.OriginalQueue != dl.OriginalQueue || back.Attempts != 3 || back.Lang != "go" {
				t.Fatalf("DeadLetterOf = %+v, %v", back, ok)
			}
		})
	}
	if _, err := AnnotateDeadLetter([]byte(`[1]`), dl); !errors.Is(err, ErrPoison) {
		t.Fatalf("AnnotateDeadLetter(array) err = %v", err)
	}
	if _, err := AnnotateDeadLetter([]byte(`{}`), DeadLetter{Attempts: -1}); !errors.Is(err, ErrInvalidEnvelope) {
		t.Fatalf("AnnotateDeadLetter(attempts -1) err = %v", err)
	}
}

func TestAnnotateDeadLetterOnAcceptedEnvelope(t *testing.T) {
	dl := DeadLetter{Reason: ReasonUnknownURN, FailedAt: 9, OriginalQueue: "orders", Attempts: 1, Lang: "go"}
	out, err := AnnotateDeadLetter([]byte(validBody), dl)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if env.Attempts != 1 || env.DeadLetter == nil || env.DeadLetter.Reason != ReasonUnknownURN || env.DeadLetter.Error != nil {
		t.Fatalf("decoded %+v / %+v", env, env.DeadLetter)
	}
	// Everything before the attempts value is unchanged.
	i := strings.Index(validBody, `"attempts":`)
	if !bytes.HasPrefix(out, []byte(validBody[:i+len(`"attempts":`)])) {
		t.Fatalf("prefix changed: %s", out)
	}
}

func TestClearDeadLetter(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"last member", `{"job":"u","attempts":3,"dead_letter":{"reason":"failed"}}`, `{"job":"u","attempts":0}`},
		{"middle member", `{"job":"u", "dead_letter" : {"a":1} , "attempts":3,"z":1}`, `{"job":"u" , "attempts":0,"z":1}`},
		{"first member", `{ "dead_letter":{}, "attempts":2}`, `{ "attempts":0}`},
		{"only member", `{ "dead_letter":{} }`, `{"attempts":0  }`},
		{"absent", `{"attempts":1}`, `{"attempts":0}`},
		{"no attempts", `{"job":"u","dead_letter":{}}`, `{"job":"u","attempts":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClearDeadLetter([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("ClearDeadLetter = %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := ClearDeadLetter([]byte(`x`)); !errors.Is(err, ErrPoison) {
		t.Fatalf("ClearDeadLetter(x) err = %v", err)
	}
}

func TestAnnotateThenClearRestoresBody(t *testing.T) {
	bodies := []string{
		validBody,
		" {\"job\":\"u\",\"trace_id\":\"t\",\"data\":{},\"meta\":{\"schema_version\":1},\"attempts\":0,\"ext\":1}\n\n",
		`{"urn":"u","attempts":0 ,"trace_id":"t","meta":{"schema_version":1},"data":{"x":12345678901234567890}}`,
	}
	for _, body := range bodies {
		dl := DeadLetter{Reason: ReasonFailed, Attempts: 3, FailedAt: 1}
		dead, err := AnnotateDeadLetter([]byte(body), dl)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ClearDeadLetter(dead)
		if err != nil {
			t.Fatal(err)
		}
		if string(back) != body {
			t.Fatalf("annotate+clear:\n%q\nwant\n%q", back, body)
		}
	}
}

func TestDeadLetterOf(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
		want       DeadLetter
	}{
		{"full", `{"dead_letter":{"reason":"failed","error":"e","exception":"E","failed_at":12,"original_queue":"q","attempts":2,"lang":"php"}}`, true,
			DeadLetter{Reason: "failed", Error: strp("e"), Exception: strp("E"), FailedAt: 12, OriginalQueue: "q", Attempts: 2, Lang: "php"}},
		{"wrong types are zero", `{"dead_letter":{"reason":1,"error":7,"failed_at":"x","attempts":-1}}`, true, DeadLetter{}},
		{"last duplicate wins", `{"dead_letter":{"reason":"a"},"dead_letter":{"reason":"b"}}`, true, DeadLetter{Reason: "b"}},
		{"absent", `{"job":"u"}`, false, DeadLetter{}},
		{"null", `{"dead_letter":null}`, false, DeadLetter{}},
		{"not json", `{"dead_letter":{}`, false, DeadLetter{}},
		{"array", `[{"dead_letter":{}}]`, false, DeadLetter{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := DeadLetterOf([]byte(tt.body))
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				if got != nil {
					t.Fatalf("got %+v with ok=false", got)
				}
				return
			}
			if !sameDeadLetter(*got, tt.want) {
				t.Fatalf("DeadLetterOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func sameDeadLetter(a, b DeadLetter) bool {
	eq := func(x, y *string) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return a.Reason == b.Reason && eq(a.Error, b.Error) && eq(a.Exception, b.Exception) && a.FailedAt == b.FailedAt &&
		a.OriginalQueue == b.OriginalQueue && a.Attempts == b.Attempts && a.Lang == b.Lang
}
