package pulsar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// readySetup returns a Transport whose consumer has queued bodies, in
// order, on its receive channel (so that the prefetcher serves Pop).
func readySetup(t *testing.T, bodies ...string) *Transport {
	t.Helper()
	fc := &benchConsumerFake{ch: make(chan pulsar.ConsumerMessage, len(bodies))}
	for _, b := range bodies {
		fc.ch <- pulsar.ConsumerMessage{Message: &fakeMessage{payload: []byte(b), props: map[string]string{}}}
	}
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = pulsar.Shared, true
	tr := newTransport(cfg, benchClientFake{fc}, false, nil, nil)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func TestReceiveReadyTakesPreparedDeliveriesInPopOrder(t *testing.T) {
	bodies := []string{`{"n":0}`, `{"n":1}`, `{"n":2}`, `{"n":3}`}
	tr := readySetup(t, bodies...)
	if m, ok := tr.ReceiveReady("q"); ok || m != nil {
		t.Fatalf("ReceiveReady before the queue was popped = %v, %v; want nothing (it never subscribes)", m, ok)
	}
	first, err := tr.Pop(context.Background(), "q", time.Second)
	if err != nil || first == nil {
		t.Fatalf("Pop = %v, %v", first, err)
	}
	got := []string{first.Body}
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(bodies) && time.Now().Before(deadline) {
		if m, ok := tr.ReceiveReady("q"); ok {
			got = append(got, m.Body)
			if err := tr.Ack(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			continue
		}
		time.Sleep(time.Millisecond) // the prefetcher has not prepared it yet
	}
	for i := range bodies {
		if i >= len(got) || got[i] != bodies[i] {
			t.Fatalf("bodies in the order handed out %q, want %q", got, bodies)
		}
	}
	if m, ok := tr.ReceiveReady("q"); ok || m != nil {
		t.Errorf("ReceiveReady with nothing prepared = %v, %v; want nothing", m, ok)
	}
	if m, ok := tr.ReceiveReady("other"); ok || m != nil {
		t.Errorf("ReceiveReady of a queue never popped = %v, %v", m, ok)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if m, ok := tr.ReceiveReady("q"); ok || m != nil {
		t.Errorf("ReceiveReady after Close = %v, %v", m, ok)
	}
	if _, err := tr.Pop(context.Background(), "q", time.Millisecond); !errors.Is(err, babelqueue.ErrClosed) {
		t.Errorf("Pop after Close = %v, want ErrClosed", err)
	}
}
