package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

// TestReceiveReadsTheRecordsHeaderList checks both pops, over
// the plain and the prefetching reader: Pop fills Headers; Receive
// leaves it nil, answers Header from the record (the last of a repeated
// key, as the map keeps it) and fills the same map on FillHeaders.
func TestReceiveReadsTheRecordsHeaderList(t *testing.T) {
	rigs := map[string]func(*testing.T) *rig{
		"plain":    func(t *testing.T) *rig { return newRig(t) },
		"prefetch": memberRig,
	}
	for name, mk := range rigs {
		t.Run(name, func(t *testing.T) {
			rg := mk(t)
			ctx := context.Background()
			body := envelope(t, 0)
			hs, _ := projection(body, t0)
			headers := append(toKafkaHeaders(hs), h("x-tenant", "first"), h("x-tenant", "acme"))
			for i := 0; i < 3; i++ {
				rg.log.append("orders", 0, kafkago.Message{Value: []byte(body), Headers: headers})
			}

			deferred, err := rg.tr.Receive(ctx, "orders", time.Second)
			if err != nil || deferred == nil {
				t.Fatalf("Receive = %v, %v", deferred, err)
			}
			if deferred.Headers != nil {
				t.Fatalf("the header map was built: %v", deferred.Headers)
			}
			if v, ok := deferred.Header("x-tenant"); !ok || v != "acme" {
				t.Fatalf(`Header("x-tenant") = %q, %v; want the last value`, v, ok)
			}
			if v, ok := deferred.Header(wire.HeaderJob); !ok || v != "urn:babel:orders:created" {
				t.Fatalf("Header(bq-job) = %q, %v", v, ok)
			}
			if _, ok := deferred.Header("absent"); ok {
				t.Fatal("an absent header is present")
			}

			// The later records were perhaps read ahead before the queue
			// was popped with deferred headers: either way, Pop fills.
			popped, err := rg.tr.Pop(ctx, "orders", time.Second)
			if err != nil || popped == nil {
				t.Fatalf("Pop = %v, %v", popped, err)
			}
			want := headerMap(headers)
			if want["x-tenant"] != "acme" {
				t.Fatalf("the reference map is wrong: %v", want)
			}
			if diff := cmp.Diff(want, popped.Headers); diff != "" {
				t.Fatalf("Pop's headers (-want +got):\n%s", diff)
			}
			deferred.FillHeaders()
			if diff := cmp.Diff(want, deferred.Headers); diff != "" {
				t.Fatalf("filled headers (-want +got):\n%s", diff)
			}
			for _, m := range []*babelqueue.ReceivedMessage{deferred, popped} {
				if err := rg.tr.Ack(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestPrefetchStopsBuildingHeaderMapsOnceHeadersAreDeferred checks that a
// queue the App pops (Receive) gets no header maps built ahead.
func TestPrefetchStopsBuildingHeaderMapsOnceHeadersAreDeferred(t *testing.T) {
	rg := memberRig(t)
	ctx := context.Background()
	body := envelope(t, 0)
	hs, _ := projection(body, t0)
	rg.log.append("orders", 0, kafkago.Message{Value: []byte(body), Headers: toKafkaHeaders(hs)})
	if m, err := rg.tr.Receive(ctx, "orders", time.Second); err != nil || m == nil {
		t.Fatalf("Receive = %v, %v", m, err)
	}
	// Records fetched from now on are read ahead with the mode known.
	const n = 50
	for i := 0; i < n; i++ {
		rg.log.append("orders", 0, kafkago.Message{Value: []byte(body), Headers: toKafkaHeaders(hs)})
	}
	for i := 0; i < n; i++ {
		m, err := rg.tr.Receive(ctx, "orders", time.Second)
		if err != nil || m == nil {
			t.Fatalf("Receive %d = %v, %v", i, m, err)
		}
		if m.Headers != nil {
			t.Fatalf("record %d: a header map was built ahead for a deferring queue", i)
		}
		if _, ok := m.Header(wire.HeaderMessageID); !ok {
			t.Fatalf("record %d: bq-message-id missing", i)
		}
	}
}
