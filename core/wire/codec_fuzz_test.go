package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fuzzSeeds are bodies worth starting from: conformant envelopes in several
// spellings, near misses of every acceptance rule, and non-JSON.
var fuzzSeeds = []string{
	validBody,
	`{"urn":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`,
	" {\"job\" : \"u\" ,\n\"trace_id\":\"t\",\"data\":{\"big\":12345678901234567890,\"f\":-1.5e-3},\"meta\":{\"schema_version\":1,\"x\":null},\"attempts\":2,\"zz\":[true,false]}\n",
	`{"job":"a\u00e9\ud83d\ude00","trace_id":"t\"","data":{"s":"<&>"},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":1},"attempts":2147483647}`,
	`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":3,"dead_letter":{"reason":"failed","error":null,"exception":"E","failed_at":1,"original_queue":"q","attempts":3,"lang":"go","x":1}}`,
	`{"job":"u","job":"v","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":1,"attempts":2}`,
	`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":2},"attempts":0}`,
	`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":"1"},"attempts":0}`,
	`{"job":"u","trace_id":"t","data":{},"meta":{},"attempts":0}`,
	`{"job":" ","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`,
	`{"job":"u","trace_id":"t","data":[],"meta":{"schema_version":1},"attempts":0}`,
	`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":1.5}`,
	`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":-1}`,
	`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":"1"}`,
	`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1}}`,
	`{}`, `[]`, `null`, `"x"`, ``, `{"a":`, "{\"a\":\"\xff\"}", "\xff\xfe", `not json`,
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		env, err := Decode(body)
		if aerr := Accepts(body); (aerr == nil) != (err == nil) {
			t.Fatalf("Decode err %v but Accepts err %v", err, aerr)
		}
		if !bytes.Equal(body, orig) {
			t.Fatal("Decode modified its input")
		}
		if err != nil {
			if errors.Is(err, ErrPoison) == errors.Is(err, ErrUnsupportedSchemaVersion) {
				t.Fatalf("error %v must wrap exactly one of ErrPoison, ErrUnsupportedSchemaVersion", err)
			}
			return
		}
		// An accepted body is strict JSON, and encoding/json reads the same
		// contract fields (last duplicate wins in both).
		if !strictValid(body) {
			t.Fatalf("accepted a body encoding/json rejects: %q", body)
		}
		// A map, unlike a struct, matches keys exactly (not case-insensitively).
		var ref map[string]json.RawMessage
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		str := func(key string) (string, bool) {
			var s string
			err := json.Unmarshal(ref[key], &s)
			return s, ref[key] != nil && err == nil
		}
		wantJob, ok := str("job")
		if !ok || IsBlank(wantJob) {
			wantJob, _ = str("urn")
		}
		wantTrace, _ := str("trace_id")
		wantAttempts, err := strconv.Atoi(string(ref["attempts"]))
		if err != nil || env.Job != wantJob || env.TraceID != wantTrace || env.Attempts != wantAttempts || string(ref["data"]) != string(env.Data()) {
			t.Fatalf("decoded job %q trace %q attempts %d data %s; encoding/json reads %q %q %s %s",
				env.Job, env.TraceID, env.Attempts, env.Data(), wantJob, wantTrace, ref["attempts"], ref["data"])
		}
		dm, err := env.DataMap()
		if err != nil {
			t.Fatalf("DataMap: %v", err)
		}
		if want := referenceTree(t, string(env.Data())); !reflect.DeepEqual(any(dm), want) {
			t.Fatalf("DataMap = %#v, encoding/json = %#v", dm, want)
		}

		// Unchanged: Encode gives back the received bytes.
		out, err := env.Encode()
		if err != nil || !bytes.Equal(out, body) {
			t.Fatalf("Encode of an unchanged envelope = %q, %v", out, err)
		}
		// Changing attempts changes only the attempts value.
		if env.Attempts < MaxAttemptsValue {
			env.Attempts++
		} else {
			env.Attempts = 0
		}
		out, err = env.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(out)
		if err != nil || again.Attempts != env.Attempts || again.Job != env.Job || again.TraceID != env.TraceID ||
			again.Meta != env.Meta || string(again.Data()) != string(env.Data()) {
			t.Fatalf("Decode(Encode(changed)) = %+v, %v", again, err)
		}
		if again2, _ := again.Encode(); !bytes.Equal(again2, out) {
			t.Fatal("Decode(Encode(Decode(x))) is not stable")
		}
		// A fresh encoding of the same fields decodes to the same fields.
		fresh := &Envelope{Job: env.Job, TraceID: env.TraceID, Meta: env.Meta, Attempts: env.Attempts, data: env.data}
		fb, err := fresh.Encode()
		if err != nil {
			t.Fatal(err)
		}
		fe, err := Decode(fb)
		if err != nil || fe.Job != env.Job || fe.TraceID != env.TraceID || fe.Meta != env.Meta || fe.Attempts != env.Attempts {
			t.Fatalf("fresh re-encoding %s → %+v, %v", fb, fe, err)
		}
	})
}

func FuzzClassify(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		class, err := ClassifyBody(body)
		switch class {
		case ClassAccepted:
			if err != nil {
				t.Fatalf("accepted with error %v", err)
			}
		case ClassPoison:
			if !errors.Is(err, ErrPoison) {
				t.Fatalf("poison with error %v", err)
			}
		case ClassUnsupportedVersion:
			if !errors.Is(err, ErrUnsupportedSchemaVersion) {
				t.Fatalf("unsupported version with error %v", err)
			}
		default:
			t.Fatalf("class %v", class)
		}

		// The poison dead letter is always valid JSON with reason poison;
		// a strict object keeps its bytes (bar the whitespace around it),
		// unless it is wrapped whole for an earlier dead_letter member or
		// an unpaired surrogate escape.
		pb := PoisonBody(body, DeadLetter{Error: strp("e"), Attempts: 1})
		if !strictValid(pb) {
			t.Fatalf("PoisonBody(%q) = %q is not valid JSON", body, pb)
		}
		if dl, ok := DeadLetterOf(pb); !ok || dl.Reason != ReasonPoison {
			t.Fatalf("PoisonBody dead letter = %+v, %v", dl, ok)
		}
		isObject := strictValid(body) && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{"))
		if isObject {
			trimmed := bytes.Trim(body, " \t\r\n")
			if l, err := locateTop(body, "dead_letter"); err == nil && !l.found && !hasUnpairedSurrogateEscape(trimmed) {
				a, _ := changedRegion(trimmed, pb)
				if a != "" {
					t.Fatalf("PoisonBody removed bytes %q from a strict object", a)
				}
			} else {
				var w struct {
					Raw string `json:"raw"`
				}
				if err := json.Unmarshal(pb, &w); err != nil || w.Raw != string(body) {
					t.Fatalf("PoisonBody(%q) wrapped raw = %q (%v), want the body", body, w.Raw, err)
				}
			}
		} else {
			var w struct {
				Raw string `json:"raw"`
			}
			if err := json.Unmarshal(pb, &w); err != nil {
				t.Fatal(err)
			}
		}

		// The projection of an accepted body equals its decoded fields.
		p := ProjectBody(body)
		if class == ClassAccepted {
			env, err := Decode(body)
			if err != nil {
				t.Fatal(err)
			}
			if p.Job != env.Job || p.TraceID != env.TraceID || p.MessageID != env.Meta.ID || p.SchemaVersion != "1" ||
				p.SourceLang != env.Meta.Lang || p.Attempts != strconv.Itoa(env.Attempts) {
				t.Fatalf("projection %+v vs envelope %+v", p, env)
			}
		}
		_ = p.Headers()
	})
}

func FuzzParseAttemptsHeader(f *testing.F) {
	for _, s := range []string{"0", "1", "007", "2147483647", "2147483648", "", " 1", "+1", "-1", "1e2", "١", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, ok := ParseAttemptsHeader(raw)
		digits := raw != "" && strings.Trim(raw, "0123456789") == ""
		v, perr := strconv.ParseUint(raw, 10, 64)
		want := digits && perr == nil && v <= MaxAttemptsValue
		if ok != want {
			t.Fatalf("ParseAttemptsHeader(%q) ok = %v, want %v", raw, ok, want)
		}
		if ok && uint64(n) != v {
			t.Fatalf("ParseAttemptsHeader(%q) = %d, want %d", raw, n, v)
		}
		if !ok && n != 0 {
			t.Fatalf("ParseAttemptsHeader(%q) = %d with ok=false", raw, n)
		}
	})
}

// lastMemberSpan finds, with encoding/json as an independent reader, the
// byte span of the value of the last top-level key in body.
func lastMemberSpan(t *testing.T, body []byte, key string) (start, end int, found bool) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	if _, err := d.Token(); err != nil {
		t.Fatal(err)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		if tok.(string) == key {
			end = int(d.InputOffset())
			start, found = end-len(raw), true
		}
	}
	if _, err := d.Token(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return start, end, found
}

func FuzzSetAttempts(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), uint32(i*7))
	}
	f.Add([]byte(`{ }`), uint32(MaxAttemptsValue))
	f.Add([]byte(`{"a":1 }`), uint32(0))
	f.Fuzz(func(t *testing.T, body []byte, n32 uint32) {
		n := int(n32 % (MaxAttemptsValue + 1))
		orig := bytes.Clone(body)
		out, err := SetAttempts(body, n)
		if !bytes.Equal(body, orig) {
			t.Fatal("SetAttempts modified its input")
		}
		isObject := strictValid(body) && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{"))
		if (err == nil) != isObject {
			t.Fatalf("SetAttempts(%q) err = %v, body is a strict object: %v", body, err, isObject)
		}
		if err != nil {
			if !errors.Is(err, ErrPoison) {
				t.Fatalf("error %v does not wrap ErrPoison", err)
			}
			return
		}
		num := strconv.Itoa(n)
		if start, end, found := lastMemberSpan(t, body, "attempts"); found {
			want := string(body[:start]) + num + string(body[end:])
			if string(out) != want {
				t.Fatalf("SetAttempts(%q, %d) = %q, want only the value replaced: %q", body, n, out, want)
			}
		} else {
			removed, added := changedRegion(body, out)
			if removed != "" || (added != `"attempts":`+num && added != `,"attempts":`+num) {
				t.Fatalf("SetAttempts(%q, %d) = %q: removed %q, added %q", body, n, out, removed, added)
			}
		}
		if !strictValid(out) {
			t.Fatalf("SetAttempts output %q is not valid JSON", out)
		}
		if p := ProjectBody(out); p.Attempts != num {
			t.Fatalf("ProjectBody(SetAttempts).Attempts = %q, want %s", p.Attempts, num)
		}

		// Without a dead_letter key, dead-lettering then redriving gives the
		// body with attempts 0: both edits touch only their own bytes.
		if _, _, has := lastMemberSpan(t, body, "dead_letter"); !has {
			dead, err := AnnotateDeadLetter(body, DeadLetter{Reason: ReasonFailed, Error: strp("e"), Attempts: n})
			if err != nil {
				t.Fatal(err)
			}
			if !strictValid(dead) {
				t.Fatalf("AnnotateDeadLetter output %q is not valid JSON", dead)
			}
			back, err := ClearDeadLetter(dead)
			if err != nil {
				t.Fatal(err)
			}
			zero, _ := SetAttempts(body, 0)
			if !bytes.Equal(back, zero) {
				t.Fatalf("ClearDeadLetter(AnnotateDeadLetter(%q)) = %q, want %q", body, back, zero)
			}
		}
	})
}
