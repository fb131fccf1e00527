package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestMakerMatchesMake makes the same envelopes with one Maker and with
// Make (fixed ids and time) and compares the bodies byte for byte, errors
// included: data of growing and shrinking sizes, failed data in the
// middle, and bodies kept while later envelopes are made.
func TestMakerMatchesMake(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	datas := []any{
		nil,
		map[string]any{"b": 2, "a": "x"},
		orderData{OrderID: 7, Note: "<n>"},
		&orderData{OrderID: 8},
		json.RawMessage(`{"big":12345678901234567890}`),
		[]byte(" {\n \"a\" : [1, 2] } "),
		map[string]string{"big": strings.Repeat("y", 3000)}, // outgrows a block
		marshalsSpaced{},
		"not an object",
		map[string]any{"c": make(chan int)},
		map[string]int{},
		orderData{OrderID: 9, Note: strings.Repeat("é", 500)},
	}
	var m Maker
	type made struct{ got, want []byte }
	var kept []made
	for round := range 3 {
		for i, d := range datas {
			opts := []MakeOption{WithQueue("q"), WithID("id-" + string(rune('a'+i))), WithTraceID("tr"), WithCreatedAt(at)}
			want, wantErr := Make("urn:t", d, opts...)
			got, err := m.Make(len(datas)-i, "urn:t", d, opts...)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("round %d data %d: Maker err %v; Make err %v", round, i, err, wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrInvalidData) {
					t.Fatalf("data %d: err %v; want ErrInvalidData", i, err)
				}
				continue
			}
			wb, _ := want.Encode()
			gb, err := got.Encode()
			if err != nil || !bytes.Equal(gb, wb) {
				t.Fatalf("round %d data %d: Maker body %s (%v); Make body %s", round, i, gb, err, wb)
			}
			kept = append(kept, made{gb, wb})
		}
	}
	for i, k := range kept {
		if !bytes.Equal(k.got, k.want) {
			t.Fatalf("body %d changed after later makes: %s; want %s", i, k.got, k.want)
		}
	}
}

// TestMakerIDs checks that a Maker's default ids are UUID v4, all
// distinct, and stay as they were while later envelopes are made, across
// id blocks of varying sizes.
func TestMakerIDs(t *testing.T) {
	var m Maker
	seen := map[string]bool{}
	var ids, copies []string
	for i := range 500 {
		env, err := m.Make(37-i%37, "urn:t", nil) // blocks of varying sizes
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{env.Meta.ID, env.TraceID} {
			if !uuidV4.MatchString(id) || seen[id] {
				t.Fatalf("id %q: not a UUID v4 or repeated", id)
			}
			seen[id] = true
		}
		ids = append(ids, env.Meta.ID, env.TraceID)
		copies = append(copies, strings.Clone(env.Meta.ID), strings.Clone(env.TraceID))
	}
	for i := range ids {
		if ids[i] != copies[i] {
			t.Fatalf("envelope %d: ids changed", i)
		}
	}
}

func TestMakerRejectsBlankJob(t *testing.T) {
	var m Maker
	if _, err := m.Make(1, " ", nil); !errors.Is(err, ErrInvalidEnvelope) {
		t.Fatalf("err = %v; want ErrInvalidEnvelope", err)
	}
}

// TestMakerIDsPastOneRandomRead makes more envelopes than one read of
// random bytes serves, and checks that no id repeats.
func TestMakerIDsPastOneRandomRead(t *testing.T) {
	var m Maker
	seen := map[string]bool{}
	for i := range 300 {
		env, err := m.Make(1000-i, "urn:t", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{env.Meta.ID, env.TraceID} {
			if !uuidV4.MatchString(id) || seen[id] {
				t.Fatalf("envelope %d: id %q not a UUID v4 or repeated", i, id)
			}
			seen[id] = true
		}
	}
}
