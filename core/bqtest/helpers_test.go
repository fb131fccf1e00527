package bqtest

import (
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/internal/testmsg"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// Test helpers shared by this package's tests.

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// envBody encodes an envelope of urn for queue orders with attempts set
// (testmsg.Body).
func envBody(t *testing.T, urn string, attempts int, opts ...wire.MakeOption) string {
	t.Helper()
	return testmsg.Body(t, urn, attempts, opts...)
}

// mustDecode decodes body or fails the test (testmsg.Decode).
func mustDecode(t *testing.T, body string) *wire.Envelope {
	t.Helper()
	return testmsg.Decode(t, body)
}

// with views mem with its features changed by fn.
func with(mem *InMemoryTransport, fn func(*driver.Features)) driver.Transport {
	f := mem.Features()
	fn(&f)
	return mem.View(f)
}
