package pulsar

import (
	"context"
	"errors"
	"sync"
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// Concurrent publishers to one topic share one producer, created once, and
// every message reaches it; a failed creation is not kept, so the next
// publish creates the producer.
func TestProducerForSharedAndCreatedOnce(t *testing.T) {
	fc := newFakeClient()
	fc.createErr = errors.New("broker away")
	tr := newTransport(defaultConfig(), fc, false, nil, nil)
	defer tr.Close()
	ctx := context.Background()
	if err := tr.Publish(ctx, "orders", envelope); err == nil {
		t.Fatal("Publish with a failing producer creation succeeded")
	}
	fc.mu.Lock()
	fc.createErr = nil
	fc.mu.Unlock()

	const publishers, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, publishers*each)
	for range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				errs <- tr.Publish(ctx, "orders", envelope)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fc.mu.Lock()
	created := len(fc.producerOpts)
	fc.mu.Unlock()
	if created != 1 {
		t.Errorf("producers created = %d, want 1", created)
	}
	p := fc.producer(tr.Topic("orders"))
	p.mu.Lock()
	sent := len(p.sent)
	p.mu.Unlock()
	if sent != publishers*each {
		t.Errorf("messages sent = %d, want %d", sent, publishers*each)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Publish(ctx, "orders", envelope); !errors.Is(err, babelqueue.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
}
