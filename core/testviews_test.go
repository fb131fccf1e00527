package babelqueue

import (
	"context"
	"maps"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// only views mem as a binding with no features at all.
func only(mem *bqtest.InMemoryTransport) Transport { return mem.View(driver.Features{}) }

// with views mem with its features changed by fn.
func with(mem *bqtest.InMemoryTransport, fn func(*driver.Features)) Transport {
	f := mem.Features()
	fn(&f)
	return mem.View(f)
}

// publishH writes a new message with out-of-band headers.
func publishH(mem *bqtest.InMemoryTransport, queue, body string, headers map[string]string) error {
	_, err := mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentPublish, Queue: queue, Body: body, Headers: headers})
	return err
}

// forward writes body with exactly headers, as a foreign producer would.
func forward(mem *bqtest.InMemoryTransport, queue, body string, headers map[string]string) error {
	_, err := mem.Send(context.Background(), &driver.Outgoing{Intent: driver.IntentForward, Queue: queue, Body: body, Headers: maps.Clone(headers)})
	return err
}

type ctxKey struct{}
