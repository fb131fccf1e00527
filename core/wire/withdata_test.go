package wire

import (
	"errors"
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
