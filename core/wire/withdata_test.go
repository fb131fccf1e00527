package wire

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestWithDataKeepsTheRestOfTheBody(t *testing.T) {
	body := `{"job":"u","trace_id":"t","data": {"a":"x"} ,"meta":{"schema_version":1,"ext":{"v":1}},"attempts":2,"z":9}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c, err := env.WithData([]byte(` {"a":12345678901234567890} `))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job":"u","trace_id":"t","data": {"a":12345678901234567890} ,"meta":{"schema_version":1,"ext":{"v":1}},"attempts":2,"z":9}`
	if string(c.Raw()) != want || string(c.Data()) != `{"a":12345678901234567890}` || string(env.Raw()) != body {
		t.Fatalf("copy %s / %s, original %s", c.Raw(), c.Data(), env.Raw())
	}
	c.Attempts = 3
	out, err := c.Encode()
	if err != nil || string(out) != `{"job":"u","trace_id":"t","data": {"a":12345678901234567890} ,"meta":{"schema_version":1,"ext":{"v":1}},"attempts":3,"z":9}` {
		t.Fatalf("Encode of the copy: %s, %v", out, err)
	}
	if _, err := env.WithData([]byte(`[]`)); !errors.Is(err, ErrInvalidData) {
		t.Fatalf("non-object data: %v", err)
	}
	made, _ := Make("u", map[string]any{"a": 1})
	m2, err := made.WithData([]byte(`{"b":2}`))
	if err != nil || string(m2.Data()) != `{"b":2}` || string(made.Data()) != `{"a":1}` {
		t.Fatalf("made copy %s, original %s, %v", m2.Data(), made.Data(), err)
	}
}

func TestReplaceDataFields(t *testing.T) {
	set := NewFieldSet(ParseFieldPath("a"), ParseFieldPath("n.b"))
	upper := func(dst, v []byte) ([]byte, bool, error) {
		return append(append(append(dst, '"'), bytes.ToUpper(v[1:len(v)-1])...), '"'), v[0] == '"', nil
	}
	body := `{"job":"u","trace_id":"t","data": {"a":"x","n":{"b":"y","c":1}} ,"meta":{"schema_version":1},"attempts":0}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c, err := env.ReplaceDataFields(set, upper)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"job":"u","trace_id":"t","data": {"a":"X","n":{"b":"Y","c":1}} ,"meta":{"schema_version":1},"attempts":0}`
	if string(c.Raw()) != want || string(env.Raw()) != body {
		t.Fatalf("copy %s, original %s", c.Raw(), env.Raw())
	}
	// The copy's data sits inside its own body: a second edit finds it.
	c2, err := c.ReplaceDataFields(NewFieldSet(ParseFieldPath("n.c")), func(dst, v []byte) ([]byte, bool, error) { return append(dst, "2"...), true, nil })
	if err != nil || string(c2.Data()) != `{"a":"X","n":{"b":"Y","c":2}}` || !strings.Contains(string(c2.Raw()), `"data": {"a":"X","n":{"b":"Y","c":2}} ,"meta"`) {
		t.Fatalf("second edit %s / %s, %v", c2.Data(), c2.Raw(), err)
	}
	if same, err := env.ReplaceDataFields(NewFieldSet(ParseFieldPath("absent")), upper); err != nil || same != env {
		t.Fatalf("nothing replaced must return the envelope itself: %v", err)
	}
	made, _ := Make("u", map[string]any{"a": "x"})
	m2, err := made.ReplaceDataFields(set, upper)
	if err != nil || string(m2.Data()) != `{"a":"X"}` || string(made.Data()) != `{"a":"x"}` {
		t.Fatalf("made copy %s, original %s, %v", m2.Data(), made.Data(), err)
	}
	if empty, _ := Make("u", nil); empty != nil {
		if same, err := empty.ReplaceDataFields(set, upper); err != nil || same != empty {
			t.Fatalf("empty data: %v", err)
		}
	}
}
