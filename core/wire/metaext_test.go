package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMakeWritesProducerMeta(t *testing.T) {
	env, err := Make("urn:a", nil, WithID("i"), WithTraceID("t"), WithQueue("q"), WithCreatedAt(time.UnixMilli(5)),
		WithMetaExt("acme", map[string]any{"tenant": "t1", "n": 1}), WithMeta("region", "eu<>"), WithMetaExt("zeta", json.RawMessage(` [1, 2] `)),
		WithMeta("region", "us"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job":"urn:a","trace_id":"t","data":{},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":5,"ext":{"acme":{"n":1,"tenant":"t1"},"zeta":[1,2]},"region":"us"},"attempts":0}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if string(env.MetaExt()) != `{"acme":{"n":1,"tenant":"t1"},"zeta":[1,2]}` {
		t.Fatalf("MetaExt of a new envelope = %s", env.MetaExt())
	}
	dec, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(dec.MetaExt()) != string(env.MetaExt()) {
		t.Fatalf("decoded MetaExt = %s", dec.MetaExt())
	}
	if v, ok := dec.MetaValue("region"); !ok || string(v) != `"us"` {
		t.Fatalf("MetaValue(region) = %s, %v", v, ok)
	}
	if v, ok := env.MetaValue("region"); !ok || string(v) != `"us"` {
		t.Fatalf("MetaValue(region) of the new envelope = %s, %v", v, ok)
	}
	if plain, _ := Make("urn:a", nil); plain.MetaExt() != nil {
		t.Fatal("no ext, no MetaExt")
	}
	var m Maker
	made, err := m.Make(1, "urn:a", nil, WithID("i"), WithTraceID("t"), WithQueue("q"), WithCreatedAt(time.UnixMilli(5)),
		WithMetaExt("acme", map[string]any{"tenant": "t1", "n": 1}), WithMeta("region", "eu<>"), WithMetaExt("zeta", json.RawMessage(` [1, 2] `)),
		WithMeta("region", "us"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := made.Encode(); string(b) != want {
		t.Fatalf("Maker wrote %s", b)
	}
}

func TestMakeRefusesReservedMetaKeys(t *testing.T) {
	for _, k := range []string{"id", "queue", "lang", "schema_version", "created_at", "max_retries", "attempts", "source", "ts"} {
		_, err := Make("urn:a", nil, WithMeta(k, 1))
		var ke *EnvelopeKeyError
		if !errors.As(err, &ke) || ke.Pointer != "/meta/"+k || !errors.Is(err, ErrForbiddenKey) || !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("WithMeta(%q): %v", k, err)
		}
		var m Maker
		if _, err := m.Make(1, "urn:a", nil, WithMeta(k, 1)); !errors.Is(err, ErrForbiddenKey) {
			t.Errorf("Maker WithMeta(%q): %v", k, err)
		}
	}
	if _, err := Make("urn:a", nil, WithMeta("ext", 1), WithMetaExt("v", 1)); !errors.Is(err, ErrForbiddenKey) || !strings.Contains(err.Error(), "/meta/ext") {
		t.Errorf("ext twice: %v", err)
	}
	if _, err := Make("urn:a", nil, WithMeta("a/b~", func() {})); err == nil || !strings.Contains(err.Error(), "/meta/a~1b~0") {
		t.Errorf("unencodable value: %v", err)
	}
}

func TestDecodeDropsForbiddenKeys(t *testing.T) {
	body := `{"job":"u","urn":"v","trace_id":"t","timestamp":1,"data":{},"meta":{"ts":2,"schema_version":1,"ext":{"acme":{"a":[1, 2]}},"max_retries":3,"source":"s","attempts":4},"attempts":0,"timestamp":5}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(env.DroppedKeys(), " "); got != "/timestamp /meta/max_retries /meta/attempts /meta/source /meta/ts /urn" {
		t.Fatalf("DroppedKeys = %s", got)
	}
	if _, ok := env.MetaValue("ts"); ok {
		t.Fatal("a dropped key is not readable")
	}
	env.Attempts = 1
	out, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job":"u","urn":"v","trace_id":"t","data":{},"meta":{"schema_version":1,"ext":{"acme":{"a":[1, 2]}}},"attempts":1}`
	if string(out) != want {
		t.Fatalf("Encode\n got %s\nwant %s", out, want)
	}
	if clean, _ := Decode(out); clean.DroppedKeys()[0] != "/urn" || len(clean.DroppedKeys()) != 1 {
		t.Fatalf("re-encoded body still carries %v", clean.DroppedKeys())
	}
	if plain, _ := Decode([]byte(`{"job":"u","trace_id":"t","data":{"timestamp":1},"meta":{"schema_version":1},"attempts":0}`)); plain.DroppedKeys() != nil {
		t.Fatal("a data key is not an envelope key")
	}
}

// Every hop edits the received bytes: meta.ext is kept byte for byte.
func TestMetaExtSurvivesEveryHop(t *testing.T) {
	const ext = `{"acme":{"tenant":"t1","big":12345678901234567890, "k":[ ]}}`
	body := []byte(`{"job":"u","trace_id":"t","data":{},"meta":{"id":"i","schema_version":1,"ext":` + ext + `},"attempts":0}`)
	retried, err := SetAttempts(body, 1)
	if err != nil {
		t.Fatal(err)
	}
	errText := "boom"
	dead, err := AnnotateDeadLetter(retried, DeadLetter{Reason: ReasonFailed, Error: &errText, OriginalQueue: "q", Attempts: 2, Lang: Lang})
	if err != nil {
		t.Fatal(err)
	}
	redriven, err := ClearDeadLetter(dead)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"retry": retried, "dead letter": dead, "redrive": redriven} {
		env, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if string(env.MetaExt()) != ext {
			t.Errorf("%s: meta.ext = %s", name, env.MetaExt())
		}
	}
}

func TestCheckOutbound(t *testing.T) {
	ok := `{"job":"u","trace_id":"t","data":{"timestamp":1,"urn":2},"meta":{"schema_version":1,"ext":{"ts":1}},"attempts":0}`
	if err := CheckOutbound([]byte(ok)); err != nil {
		t.Fatalf("a clean envelope: %v", err)
	}
	for body, ptr := range map[string]string{
		`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0,"timestamp":1}`:       "/timestamp",
		`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1,"source":"x","ts":1},"attempts":0}`: "/meta/source",
		`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1,"max_retries":3},"attempts":0}`:     "/meta/max_retries",
		`{"urn":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`:                     "/urn",
		`{"job":"u","urn":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`:           "/urn",
	} {
		var ke *EnvelopeKeyError
		if err := CheckOutbound([]byte(body)); !errors.As(err, &ke) || ke.Pointer != ptr || !errors.Is(err, ErrForbiddenKey) {
			t.Errorf("%s: %v, want %s refused", body, err, ptr)
		}
	}
	if err := CheckOutbound([]byte(`[]`)); !errors.Is(err, ErrPoison) {
		t.Errorf("not an envelope: %v", err)
	}
}
