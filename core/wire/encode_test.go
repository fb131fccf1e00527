package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// topKeys returns the top-level keys of a JSON object in order.
func topKeys(t *testing.T, b []byte) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	var keys []string
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestEncodeFreshLayout(t *testing.T) {
	created := time.UnixMilli(1749132727000)
	env, err := Make("urn:babel:orders:created", map[string]any{"order_id": 1042, "note": "<a&b>"},
		WithQueue("orders"), WithTraceID("trace-1"), WithID("id-1"), WithCreatedAt(created))
	if err != nil {
		t.Fatal(err)
	}
	out, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job":"urn:babel:orders:created","trace_id":"trace-1","data":{"note":"<a&b>","order_id":1042},` +
		`"meta":{"id":"id-1","queue":"orders","lang":"go","schema_version":1,"created_at":1749132727000},"attempts":0}`
	if string(out) != want {
		t.Fatalf("Encode =\n%s\nwant\n%s", out, want)
	}
	if !json.Valid(out) {
		t.Fatal("invalid JSON")
	}

	env.DeadLetter = &DeadLetter{Reason: ReasonFailed, FailedAt: 5, OriginalQueue: "orders", Attempts: 3}
	env.Attempts = 3
	out, err = env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(topKeys(t, out), ",")
	if got != "job,trace_id,data,meta,attempts,dead_letter" {
		t.Fatalf("key order %s", got)
	}
	if !strings.HasSuffix(string(out), `"attempts":3,"dead_letter":{"reason":"failed","error":null,"exception":null,"failed_at":5,"original_queue":"orders","attempts":3,"lang":"go"}}`) {
		t.Fatalf("dead letter layout: %s", out)
	}
}

func TestEncodeRejectsWhatDecodeRejects(t *testing.T) {
	base := func() *Envelope {
		e, err := Make("u", nil)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	decoded := func() *Envelope {
		e, err := Decode([]byte(validBody))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	tests := []struct {
		name string
		env  *Envelope
		edit func(*Envelope)
	}{
		{"blank job", base(), func(e *Envelope) { e.Job = " " }},
		{"blank trace", base(), func(e *Envelope) { e.TraceID = "" }},
		{"negative attempts", base(), func(e *Envelope) { e.Attempts = -1 }},
		{"attempts too large", base(), func(e *Envelope) { e.Attempts = MaxAttemptsValue + 1 }},
		{"schema version", base(), func(e *Envelope) { e.Meta.SchemaVersion = 2 }},
		{"zero envelope", &Envelope{}, func(*Envelope) {}},
		{"negative dead letter attempts", base(), func(e *Envelope) { e.DeadLetter = &DeadLetter{Attempts: -2} }},
		{"decoded blank job", decoded(), func(e *Envelope) { e.Job = "" }},
		{"decoded negative attempts", decoded(), func(e *Envelope) { e.Attempts = -3 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.edit(tt.env)
			if out, err := tt.env.Encode(); !errors.Is(err, ErrInvalidEnvelope) {
				t.Fatalf("Encode = %s, %v; want ErrInvalidEnvelope", out, err)
			}
		})
	}
}

func TestEncodeDecodedUnchangedIsIdentical(t *testing.T) {
	bodies := []string{
		validBody,
		` {"zeta":true, "urn" : "u" ,"meta":{ "x":[1,2], "schema_version":1 },"data":{"big":12345678901234567890, "f":1e400},"trace_id":"t","attempts":4,"unknown":{"a":null}}` + "\n",
		`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":1,"dead_letter":{"reason":"x","zzz":[1]}}`,
	}
	for _, body := range bodies {
		env, err := Decode([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		out, err := env.Encode()
		if err != nil || string(out) != body {
			t.Fatalf("Encode = %q, %v; want the received bytes %q", out, err, body)
		}
	}
}

// changedRegion returns the part of a and b between their common prefix
// and common suffix.
func changedRegion(a, b []byte) (fromA, fromB string) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return string(a[p : len(a)-s]), string(b[p : len(b)-s])
}

func TestEncodeDecodedPatchesOnlyChangedFields(t *testing.T) {
	body := ` {"zeta":true, "urn" : "u" ,"meta":{ "x":[1,2], "schema_version":1 , "queue":"q"},"data":{"big":12345678901234567890},"trace_id":"t","attempts": 4 ,"unknown":{"a":null}}`
	tests := []struct {
		name string
		edit func(*Envelope)
		want string // the whole expected body
	}{
		{"attempts", func(e *Envelope) { e.Attempts = 12 },
			` {"zeta":true, "urn" : "u" ,"meta":{ "x":[1,2], "schema_version":1 , "queue":"q"},"data":{"big":12345678901234567890},"trace_id":"t","attempts": 12 ,"unknown":{"a":null}}`},
		{"job under urn key", func(e *Envelope) { e.Job = "v<>" },
			` {"zeta":true, "urn" : "v<>" ,"meta":{ "x":[1,2], "schema_version":1 , "queue":"q"},"data":{"big":12345678901234567890},"trace_id":"t","attempts": 4 ,"unknown":{"a":null}}`},
		{"trace", func(e *Envelope) { e.TraceID = "t2" },
			` {"zeta":true, "urn" : "u" ,"meta":{ "x":[1,2], "schema_version":1 , "queue":"q"},"data":{"big":12345678901234567890},"trace_id":"t2","attempts": 4 ,"unknown":{"a":null}}`},
		{"meta queue in place, id added", func(e *Envelope) { e.Meta.Queue = "r"; e.Meta.ID = "i" },
			` {"zeta":true, "urn" : "u" ,"meta":{ "x":[1,2], "schema_version":1 , "queue":"r","id":"i"},"data":{"big":12345678901234567890},"trace_id":"t","attempts": 4 ,"unknown":{"a":null}}`},
		{"dead letter added", func(e *Envelope) { e.DeadLetter = &DeadLetter{Reason: "failed", Attempts: 4, Lang: "go"} },
			` {"zeta":true, "urn" : "u" ,"meta":{ "x":[1,2], "schema_version":1 , "queue":"q"},"data":{"big":12345678901234567890},"trace_id":"t","attempts": 4 ,"unknown":{"a":null},"dead_letter":{"reason":"failed","error":null,"exception":null,"failed_at":0,"original_queue":"","attempts":4,"lang":"go"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Decode([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(env)
			out, err := env.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				a, b := changedRegion([]byte(tt.want), out)
				t.Fatalf("Encode =\n%s\nwant\n%s\n(differs: want %q got %q)", out, tt.want, a, b)
			}
			if _, err := Decode(out); err != nil {
				t.Fatalf("re-decode: %v", err)
			}
		})
	}
}

func TestEncodeDecodedDeadLetterChanges(t *testing.T) {
	body := `{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":3,"dead_letter":{"reason":"failed","error":"e","keep":1,"attempts":3},"z":0}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	msg := "boom"
	env.DeadLetter.Error = &msg
	out, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":3,"dead_letter":{"reason":"failed","error":"boom","exception":null,"failed_at":0,"original_queue":"","attempts":3,"lang":"go","keep":1},"z":0}`
	if string(out) != want {
		t.Fatalf("Encode = %s\nwant %s", out, want)
	}

	env, _ = Decode([]byte(body))
	env.DeadLetter = nil
	out, err = env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":3,"z":0}`; string(out) != want {
		t.Fatalf("Encode without dead letter = %s", out)
	}
}

func TestRoundTripStable(t *testing.T) {
	env, err := Make("urn:x", map[string]any{"k": []any{1, "two", nil, true}}, WithQueue("q"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(first)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Job != env.Job || dec.TraceID != env.TraceID || dec.Meta != env.Meta || dec.Attempts != 0 || string(dec.Data()) != string(env.Data()) {
		t.Fatalf("round trip: made %+v, decoded %+v", env, dec)
	}
	second, err := dec.Encode()
	if err != nil || !bytes.Equal(first, second) {
		t.Fatalf("re-encode changed bytes:\n%s\n%s", first, second)
	}
}

func TestEncodeDecodedMetaEdits(t *testing.T) {
	env, err := Decode([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	env.Meta.Lang = "go"
	env.Meta.CreatedAt = 1
	out, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(strings.Replace(validBody, `"lang":"php"`, `"lang":"go"`, 1), `"created_at":1749132727000`, `"created_at":1`, 1)
	if string(out) != want {
		t.Fatalf("Encode = %s\nwant %s", out, want)
	}
}

func TestHandMadeEnvelope(t *testing.T) {
	env := &Envelope{Job: "u", TraceID: "t", Meta: Meta{SchemaVersion: SchemaVersion}}
	if string(env.Data()) != "{}" {
		t.Fatalf("Data() = %s", env.Data())
	}
	m, err := env.DataMap()
	if err != nil || len(m) != 0 || m == nil {
		t.Fatalf("DataMap = %v, %v", m, err)
	}
	out, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job":"u","trace_id":"t","data":{},"meta":{"id":"","queue":"","lang":"","schema_version":1,"created_at":0},"attempts":0}`
	if string(out) != want {
		t.Fatalf("Encode = %s", out)
	}
	if _, err := Decode(out); err != nil {
		t.Fatalf("Decode(Encode(hand-made)) = %v", err)
	}
}
