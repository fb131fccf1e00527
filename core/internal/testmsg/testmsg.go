// Package testmsg holds the envelope helpers the tests of core and
// core/bqtest share, so that each is written once.
package testmsg

import (
	"testing"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Body returns the encoded envelope of urn for queue orders, with data
// {"n":1} and attempts set; it fails the test on any error.
func Body(t testing.TB, urn string, attempts int, opts ...wire.MakeOption) string {
	t.Helper()
	env, err := wire.Make(urn, map[string]any{"n": 1}, append([]wire.MakeOption{wire.WithQueue("orders")}, opts...)...)
	if err != nil {
		t.Fatalf("Make: %v", err)
	}
	b, err := env.Encode()
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if attempts != 0 {
		b, err = wire.SetAttempts(b, attempts)
		if err != nil {
			t.Fatalf("SetAttempts: %v", err)
		}
	}
	return string(b)
}

// Decode decodes body or fails the test.
func Decode(t testing.TB, body string) *wire.Envelope {
	t.Helper()
	env, err := wire.Decode([]byte(body))
	if err != nil {
		t.Fatalf("Decode(%s): %v", body, err)
	}
	return env
}
