//go:build integration

package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// On the broker: while a rebalance revokes a member's partitions and a
// record it handed out is still in flight, ReceiveReady hands out none of
// the records that member had fetched ahead, and no member hands out a
// record of a partition it does not hold (the assignment events and
// hand-outs are logged under the members' locks).
func TestIntegrationReceiveReadyNeverHandsOutARevokedPartition(t *testing.T) {
	topic, group := uniq("it-ready-revoke"), uniq("g")
	const parts, n = 2, 400
	pub := itTransport(t)
	ensure(t, pub, topic, parts)
	publishN(t, pub, topic, n)
	log := &memberLog{owned: map[string]map[int]bool{}, out: map[string]int{}, resume: map[string]time.Time{}}
	opts := func(name string) []Option {
		return []Option{WithGroupID(group), WithSessionTimeout(6 * time.Second), WithRevokeTimeout(5 * time.Second),
			WithCommitInterval(50 * time.Millisecond), func(c *config) { c.memberEvent = log.hook(name) }}
	}
	ctx := bgCtx(t, 2*time.Minute)
	a := itTransport(t, opts("a")...)
	held, err := a.Receive(ctx, topic, 20*time.Second)
	for err == nil && held == nil && ctx.Err() == nil {
		held, err = a.Receive(ctx, topic, 20*time.Second)
	}
	if err != nil || held == nil {
		t.Fatalf("Receive = %v, %v", held, err)
	}
	m := a.memberOf(topic)
	buffered := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.buffered
	}
	bqtest.WaitUntil(t, 20*time.Second, "records fetched ahead", func() bool { return buffered() > 1 })
	// The path works on the broker: a buffered record, handed out at once.
	ready, ok := a.ReceiveReady(topic)
	if !ok || ready == nil {
		t.Fatal("ReceiveReady with records buffered handed out nothing")
	}
	if err := a.Ack(ctx, ready); err != nil {
		t.Fatal(err)
	}
	bqtest.WaitUntil(t, 20*time.Second, "more records fetched ahead", func() bool { return buffered() > 0 })

	// A second member joins: a's partitions are revoked while held is in
	// flight, so a holds no live partition until held settles or the
	// revoke timeout ends.
	b, err := New(append([]Option{WithBrokers(brokerList(t)...)}, opts("b")...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	bctx, stopB := context.WithCancel(ctx)
	bWG := runConsumer(bctx, t, b, topic, 2, 0)
	revoked := func() bool { return log.ownedBy("a") == 0 }
	bqtest.WaitUntil(t, 30*time.Second, "the revocation of a's partitions", revoked)
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if r, ok := a.ReceiveReady(topic); ok || r != nil {
			t.Fatalf("ReceiveReady handed out %d@%d during the revocation", r.Partition, r.Offset)
		}
	}
	if k := buffered(); k != 0 {
		t.Fatalf("%d records still buffered during the revocation", k)
	}
	if err := a.Ack(ctx, held); err != nil {
		t.Fatalf("Ack within the revoke timeout: %v", err)
	}
	// After the rebalance a reads on through ReceiveReady and Receive;
	// every hand-out is of a partition it holds (checked by the log).
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, ok := a.ReceiveReady(topic)
		if !ok {
			if r, err = a.Receive(ctx, topic, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if r == nil {
			continue
		}
		if err := a.Ack(ctx, r); err != nil {
			t.Fatal(err)
		}
		log.mu.Lock()
		done := len(log.out) == n
		log.mu.Unlock()
		if done {
			break
		}
	}
	stopB()
	bWG.Wait()
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, bad := range log.bad {
		t.Error(bad)
	}
	if len(log.out) == 0 {
		t.Fatal("nothing handed out")
	}
}
