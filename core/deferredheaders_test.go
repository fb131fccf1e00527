package babelqueue

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// countingSource is a HeaderSource over a map that counts the maps built.
type countingSource struct {
	m     map[string]string
	built *atomic.Int64
}

func (s countingSource) LookupHeader(key string) (string, bool) {
	v, ok := s.m[key]
	return v, ok
}

func (s countingSource) HeaderMap() map[string]string {
	s.built.Add(1)
	return maps.Clone(s.m)
}

// deferringTransport is the in-memory transport whose Receive hands its
// messages out with their headers deferred, as the Kafka binding does.
type deferringTransport struct {
	*bqtest.InMemoryTransport
	built atomic.Int64 // header maps built from the sources
}

func (t *deferringTransport) Receive(ctx context.Context, queue string, timeout time.Duration) (*driver.ReceivedMessage, error) {
	m, err := t.Pop(ctx, queue, timeout)
	if m != nil && m.Headers != nil {
		m.DeferHeaders(countingSource{m: m.Headers, built: &t.built})
	}
	return m, err
}

func TestReceivedMessageDeferredHeaders(t *testing.T) {
	var built atomic.Int64
	m := &driver.ReceivedMessage{Headers: map[string]string{"stale": "1"}}
	m.DeferHeaders(countingSource{m: map[string]string{"x-tenant": "acme"}, built: &built})
	if m.Headers != nil {
		t.Fatal("Headers is not nil while deferred")
	}
	if v, ok := m.Header("x-tenant"); !ok || v != "acme" {
		t.Fatalf("Header through the source = %q, %v", v, ok)
	}
	if _, ok := m.Header("stale"); ok {
		t.Fatal("Header read the map the source replaced")
	}
	if built.Load() != 0 {
		t.Fatal("a lookup built the map")
	}
	m.FillHeaders()
	m.FillHeaders()
	if m.Headers["x-tenant"] != "acme" || built.Load() != 1 {
		t.Fatalf("after FillHeaders twice: Headers %v, %d maps built (want 1)", m.Headers, built.Load())
	}
	// Headers set on a deferred message win over the source.
	set := &driver.ReceivedMessage{}
	set.DeferHeaders(countingSource{m: map[string]string{"x-tenant": "acme"}, built: &built})
	set.Headers = map[string]string{"x-link": "1"}
	if _, ok := set.Header("x-tenant"); ok {
		t.Fatal("Header read the source although Headers was set")
	}
	set.FillHeaders()
	if len(set.Headers) != 1 || set.Headers["x-link"] != "1" || built.Load() != 1 {
		t.Fatalf("FillHeaders replaced Headers that were set: %v", set.Headers)
	}
	plain := &driver.ReceivedMessage{Headers: map[string]string{"a": "b"}}
	plain.FillHeaders()
	if plain.Headers["a"] != "b" {
		t.Fatal("FillHeaders changed a message whose headers were not deferred")
	}
}

func TestAppHandlesWithDeferredHeadersWithoutBuildingTheMap(t *testing.T) {
	tr := &deferringTransport{InMemoryTransport: bqtest.NewInMemoryTransport()}
	a := testApp(tr)
	var replay bool
	var tenant string
	a.Handle("urn:x", func(ctx context.Context, env *Envelope) error {
		replay = IsReplay(ctx)
		return nil
	})
	a.Handle("urn:y", func(ctx context.Context, env *Envelope) error {
		tenant = HeadersFromContext(ctx)["x-tenant"]
		return nil
	})
	headers := map[string]string{"x-tenant": "acme", wire.HeaderReplayBypass: "1"}
	if err := publishH(tr.InMemoryTransport, "orders", envBody(t, "urn:x", 0), headers); err != nil {
		t.Fatal(err)
	}
	drain(t, a, "orders")
	if !replay {
		t.Fatal("IsReplay did not see the deferred bq-replay-bypass header")
	}
	if n := tr.built.Load(); n != 0 {
		t.Fatalf("%d header maps built for a message handled at once, want 0", n)
	}
	if err := publishH(tr.InMemoryTransport, "orders", envBody(t, "urn:y", 0), headers); err != nil {
		t.Fatal(err)
	}
	drain(t, a, "orders")
	if tenant != "acme" {
		t.Fatalf("HeadersFromContext gave x-tenant %q, want acme", tenant)
	}
}

// TestAppFillsDeferredHeadersOnEveryOtherPath runs each settle path on a
// message whose headers are deferred and checks that what it writes keeps
// the message's own header.
func TestAppFillsDeferredHeadersOnEveryOtherPath(t *testing.T) {
	cases := []struct {
		name  string
		opts  []Option
		body  func(t *testing.T) string
		read  string // the queue the written copy lands on
		drain int    // Drain calls before reading it
	}{
		// Two retries, then the dead letter, which has the header only if
		// both retried copies carried it on.
		{name: "retries", opts: []Option{WithMaxAttempts(3)}, body: func(t *testing.T) string { return envBody(t, "urn:fail", 0) }, read: "orders.dlq", drain: 1},
		{name: "dead letter after the last attempt", opts: []Option{WithMaxAttempts(1)}, body: func(t *testing.T) string { return envBody(t, "urn:fail", 0) }, read: "orders.dlq", drain: 1},
		{name: "poison", body: func(*testing.T) string { return "{not json" }, read: "orders.dlq", drain: 1},
		{name: "unknown URN", opts: []Option{WithUnknownURNStrategy(StrategyDeadLetter)}, body: func(t *testing.T) string { return envBody(t, "urn:nobody", 0) }, read: "orders.dlq", drain: 1},
		{name: "version gate", body: func(t *testing.T) string {
			return strings.Replace(envBody(t, "urn:fail", 0), `"schema_version":1`, `"schema_version":2`, 1)
		}, read: "orders.dlq", drain: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &deferringTransport{InMemoryTransport: bqtest.NewInMemoryTransport()}
			a := testApp(tr, tc.opts...)
			a.Handle("urn:fail", func(context.Context, *Envelope) error { return errors.New("declined") })
			ctx := context.Background()
			headers := map[string]string{"x-tenant": "acme"}
			if err := publishH(tr.InMemoryTransport, "orders", tc.body(t), headers); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.drain; i++ {
				if _, err := a.Drain(ctx, "orders"); err != nil {
					t.Fatal(err)
				}
			}
			// Read the copy with the plain Pop: its headers as written.
			got, err := tr.Pop(ctx, tc.read, 0)
			if err != nil || got == nil {
				t.Fatalf("nothing written to %s: %v", tc.read, err)
			}
			if tc.name == "version gate" && !strings.Contains(got.Body, `"schema_version":2`) {
				t.Fatalf("the version-gated message was not forwarded unchanged: %s", got.Body)
			}
			if got.Headers["x-tenant"] != "acme" {
				t.Fatalf("the copy on %s lost the message's header: %v", tc.read, got.Headers)
			}
			if tr.built.Load() == 0 {
				t.Fatal("the headers were never filled, yet the copy has them: the test reads the wrong message")
			}
		})
	}
}
