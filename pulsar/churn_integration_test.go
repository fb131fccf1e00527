//go:build integration

package pulsar

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// churnLog records the handlings of the consumers-joining-and-leaving
// test: per key, which consumer is in a handler, the next number due and
// what came out of order.
type churnLog struct {
	mu         sync.Mutex
	active     map[int]string // key -> consumer in a handler of it
	next       map[int]int    // key -> next number not yet handled
	seen       map[[2]int]int // (key, number) -> handlings
	by         map[string]int // consumer -> handlings
	overlaps   []string       // a key in two consumers' handlers at once
	violations []string       // a number handled before an earlier one of its key
	dups       int
	lateDups   int // duplicates handled after a later number of their key
}

func (l *churnLog) begin(name string, m bqtest.KeyedSeq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if other := l.active[m.K]; other != "" && len(l.overlaps) < 20 {
		l.overlaps = append(l.overlaps, fmt.Sprintf("key %d: %s began #%d while %s handled it", m.K, name, m.N, other))
	}
	l.active[m.K] = name
}

func (l *churnLog) end(name string, m bqtest.KeyedSeq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active[m.K] == name {
		delete(l.active, m.K)
	}
	l.by[name]++
	c := [2]int{m.K, m.N}
	l.seen[c]++
	switch {
	case l.seen[c] > 1:
		l.dups++
		if m.N < l.next[m.K]-1 {
			l.lateDups++
		}
	case m.N != l.next[m.K]:
		if len(l.violations) < 20 {
			l.violations = append(l.violations, fmt.Sprintf("key %d: %s handled #%d, #%d was due", m.K, name, m.N, l.next[m.K]))
		}
		l.next[m.K] = max(l.next[m.K], m.N+1)
	default:
		l.next[m.K] = m.N + 1
	}
}

// TestIntegrationAppConsumersJoiningAndLeavingKeyShared runs three Apps,
// each on its own transport, on one Key_Shared subscription while 50 keys
// × 100 numbers are published: a is present throughout, b and c join and
// leave mid-run. Nothing is lost, each key is handled in its publish
// order and by one consumer at a time, and the duplicates stay within
// what the leaving consumers had in flight.
//
// What Pulsar guarantees at a key's hand-over (Key_Shared, the default
// auto-split hash ranges, out-of-order delivery not allowed): when a
// consumer joins, the hashes moved to it are not dispatched to it until
// the messages of those hashes already sent to their previous owner are
// acknowledged; when a consumer leaves, its unacknowledged messages are
// redelivered to the new owners before later messages of their keys. The
// App closes a leaving consumer only after its handlers have settled.
func TestIntegrationAppConsumersJoiningAndLeavingKeyShared(t *testing.T) {
	const keys, n, inFlight = 50, 100, 32
	q := uniqueQueue(t)
	log := &churnLog{active: map[int]string{}, next: map[int]int{}, seen: map[[2]int]int{}, by: map[string]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	type member struct {
		tr   *Transport
		stop context.CancelFunc
		done chan error
	}
	start := func(name string) *member {
		tr, err := New(WithServiceURL(brokerURL(t)), WithTimeouts(10*time.Second, 10*time.Second),
			WithSubscriptionType(pulsar.KeyShared), WithRepublishRetries())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.consumerFor(q); err != nil { // subscribed when start returns
			t.Fatal(err)
		}
		app, err := babelqueue.NewApp(tr, babelqueue.WithPollTimeout(200*time.Millisecond),
			babelqueue.WithConcurrency(inFlight, babelqueue.OrderKey), babelqueue.WithMaxPending(inFlight))
		if err != nil {
			t.Fatal(err)
		}
		app.Handle("urn:it:churn", func(_ context.Context, env *babelqueue.Envelope) error {
			var m bqtest.KeyedSeq
			if err := env.BindData(&m); err != nil {
				return err
			}
			log.begin(name, m)
			time.Sleep(time.Duration(rand.IntN(5001)) * time.Microsecond)
			log.end(name, m)
			return nil
		})
		cctx, stop := context.WithCancel(ctx)
		m := &member{tr: tr, stop: stop, done: make(chan error, 1)}
		go func() { m.done <- app.Consume(cctx, q) }()
		return m
	}
	leave := func(m *member) {
		m.stop()
		select {
		case err := <-m.done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Consume = %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Consume did not stop")
		}
		if err := m.tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}

	a := start("a")
	defer leave(a)
	pub, err := babelqueue.NewApp(newIntegrationTransport(t, WithSubscriptionType(pulsar.Shared)))
	if err != nil {
		t.Fatal(err)
	}
	// Each key's numbers are published in order by one goroutine, paced so
	// that the run spans the joins and leaves (about 6 s).
	var wg sync.WaitGroup
	var failed atomic.Value
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte(fmt.Sprintf("key-%d", k))
			for i := range n {
				if _, err := pub.Publish(ctx, "urn:it:churn", bqtest.KeyedSeq{K: k, N: i}, babelqueue.ToQueue(q), babelqueue.WithKey(key)); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				time.Sleep(60 * time.Millisecond)
			}
		}()
	}
	began := time.Now()
	time.Sleep(time.Second)
	b := start("b")
	time.Sleep(time.Second)
	c := start("c")
	time.Sleep(1500 * time.Millisecond)
	leave(b)
	time.Sleep(1500 * time.Millisecond)
	leave(c)
	const leaves = 2
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	distinct := func() int {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.seen)
	}
	for deadline := time.Now().Add(90 * time.Second); distinct() < keys*n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages handled", distinct(), keys*n)
		}
	}
	took := time.Since(began)
	drained := waitStats(t, q, DefaultSubscription, 30*time.Second, "the backlog to drain",
		func(s subscriptionStats) bool { return s.MsgBacklog == 0 })
	log.mu.Lock()
	defer log.mu.Unlock()
	bound := leaves * inFlight
	fmt.Printf("bench: pulsar-churn-duplicates value=%d late=%d records=%d joins=2 leaves=%d inflight-bound=%d\n",
		log.dups, log.lateDups, keys*n, leaves, bound)
	t.Logf("Key_Shared churn: %d handled in %v (a %d, b %d, c %d), %d duplicates (%d after a later number), %d order violations, %d overlaps; subscription %+v",
		keys*n, took.Round(time.Millisecond), log.by["a"], log.by["b"], log.by["c"], log.dups, log.lateDups,
		len(log.violations), len(log.overlaps), drained)
	for _, v := range log.violations {
		t.Error(v)
	}
	for _, o := range log.overlaps {
		t.Error(o)
	}
	if log.by["b"] == 0 || log.by["c"] == 0 {
		t.Errorf("a joining consumer handled nothing: b %d, c %d", log.by["b"], log.by["c"])
	}
	if log.dups > bound {
		t.Errorf("%d duplicate handlings, more than the in-flight bound %d", log.dups, bound)
	}
}
