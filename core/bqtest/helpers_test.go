package bqtest

import (
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Test helpers shared by this package's tests.

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// envBody encodes an envelope of urn for queue orders with attempts set.
func envBody(t *testing.T, urn string, attempts int, opts ...wire.MakeOption) string {
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

// mustDecode decodes body or fails the test.
func mustDecode(t *testing.T, body string) *wire.Envelope {
	t.Helper()
	env, err := wire.Decode([]byte(body))
	if err != nil {
		t.Fatalf("Decode(%s): %v", body, err)
	}
	return env
}

// with views mem with its features changed by fn.
func with(mem *InMemoryTransport, fn func(*driver.Features)) driver.Transport {
	f := mem.Features()
	fn(&f)
	return mem.View(f)
}
