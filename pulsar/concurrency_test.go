package pulsar

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// TestConcurrentAppReceivesAcksNacksAndSendsFromManyGoroutines runs an App
// with 8 handlers at once over the binding (go test -race): Receive, Ack,
// HandBack (nack) and Send are called from several goroutines, a failing
// message is nacked without holding the other keys back, and each key is
// handled in its order.
func TestConcurrentAppReceivesAcksNacksAndSendsFromManyGoroutines(t *testing.T) {
	s := newFake(t, WithSubscriptionType(pulsar.KeyShared), WithMaxWaitTime(10*time.Millisecond))
	s.fc.loopback = true
	fc := s.fc.consumer("orders")
	fc.redeliverOnNack = true
	const keys, n = 8, 12
	for i := range n {
		for k := range keys {
			env, err := babelqueue.Make("urn:t:seq", map[string]any{"k": k, "n": i}, babelqueue.WithQueue("orders"))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := env.Encode()
			fc.ch <- &fakeMessage{payload: raw, props: map[string]string{}, key: fmt.Sprint("key-", k)}
		}
	}
	a, err := babelqueue.NewApp(s.tr, babelqueue.WithDefaultQueue("orders"), babelqueue.WithPollTimeout(10*time.Millisecond),
		babelqueue.WithConcurrency(8, babelqueue.OrderKey), babelqueue.WithFailureBackoff(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		handled = map[int][]int{}
		failed  = map[string]bool{}
	)
	a.Handle("urn:t:seq", func(ctx context.Context, env *babelqueue.Envelope) error {
		var m struct{ K, N int }
		if err := env.BindData(&m); err != nil {
			return err
		}
		mu.Lock()
		handled[m.K] = append(handled[m.K], m.N)
		first := !failed[env.Meta.ID]
		failed[env.Meta.ID] = true
		mu.Unlock()
		// Every handler also publishes: Send from several goroutines.
		if _, err := a.Publish(ctx, "urn:t:audit", m, babelqueue.ToQueue("audit"), babelqueue.WithKey([]byte(fmt.Sprint("key-", m.K)))); err != nil {
			return err
		}
		if m.K == 3 && m.N == 5 && first {
			return errors.New("fails once: nacked, redelivered")
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx) }()
	bqtest.WaitUntil(t, 5*time.Second, "every message acknowledged", func() bool { acked, _ := fc.counts(); return acked == keys*n })
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Consume = %v", err)
	}
	if _, nacked := fc.counts(); nacked != 1 {
		t.Errorf("nacked %d, want the one failure", nacked)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, got := range handled {
		if k == 3 {
			// The nacked message comes back after the later ones of its
			// key: a nack is Pulsar's redelivery, not a rewind.
			if len(got) != n+1 {
				t.Errorf("key 3 handled %v", got)
			}
			continue
		}
		if !slices.IsSorted(got) || len(got) != n {
			t.Errorf("key %d handled %v, want 0..%d in order", k, got, n-1)
		}
	}
	if got := len(s.fc.producer(s.tr.Topic("audit")).messages()); got != keys*n+1 {
		t.Errorf("published %d audit messages, want %d", got, keys*n+1)
	}
}

func TestOrderOfReadsOrderingKeyThenKeyAndPartition(t *testing.T) {
	if k, p := orderOf(&fakeMessage{key: "k", orderingKey: "ok"}); string(k) != "ok" || p != 0 {
		t.Errorf("orderOf = %q %d", k, p)
	}
	if k, _ := orderOf(&fakeMessage{key: "k"}); string(k) != "k" {
		t.Errorf("orderOf key = %q", k)
	}
	if k, _ := orderOf(&fakeMessage{}); k != nil {
		t.Errorf("orderOf of a keyless message = %q, want nil", k)
	}
}
