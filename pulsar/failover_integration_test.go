//go:build integration

package pulsar

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/babelqueue/babelqueue-go/brokertest"
)

// Two Transports on one Failover subscription of a partitioned topic,
// each subscribing a consumer per partition: every partition's messages
// reach exactly one of them (one active consumer per partition), the
// broker spreads the partitions over both as it does for the client's
// partitioned consumer, and every message arrives once; once one closes,
// the other takes over its partitions.
func TestIntegrationFailoverPartitionConsumersStayFailover(t *testing.T) {
	const partitions, keys, n = 4, 40, 5
	q := uniqueQueue(t)
	brokertest.PulsarPartitionedTopic(t, q, partitions)
	trs := []*Transport{
		newIntegrationTransport(t, WithSubscriptionType(pulsar.Failover), WithRepublishRetries()),
		newIntegrationTransport(t, WithSubscriptionType(pulsar.Failover), WithRepublishRetries()),
	}
	for _, tr := range trs {
		if _, err := tr.consumerFor(q); err != nil {
			t.Fatal(err)
		}
		if s := tr.consumers[q]; len(s.pre.feed) != partitions {
			t.Fatalf("%d receive channels, want one per partition (%d)", len(s.pre.feed), partitions)
		}
	}
	time.Sleep(time.Second) // the broker settles the active consumers
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	publishKeyedSeq(ctx, t, q, keys, n)

	var mu sync.Mutex
	owner := map[int32]map[int]bool{} // partition -> transports that received from it
	seen := map[string]int{}
	var wg sync.WaitGroup
	for i, tr := range trs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				m, err := tr.Pop(ctx, q, 200*time.Millisecond)
				if err != nil {
					return
				}
				if m == nil {
					mu.Lock()
					done := len(seen) >= keys*n
					mu.Unlock()
					if done {
						return
					}
					continue
				}
				if err := tr.Ack(ctx, m); err != nil {
					t.Errorf("ack: %v", err)
				}
				mu.Lock()
				if owner[m.Partition] == nil {
					owner[m.Partition] = map[int]bool{}
				}
				owner[m.Partition][i] = true
				seen[Message(m).ID().String()+"@"+string(rune('0'+m.Partition))]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != keys*n {
		t.Fatalf("received %d distinct messages, want %d", len(seen), keys*n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("message %s received %d times", id, c)
		}
	}
	used := map[int]bool{}
	for part, by := range owner {
		if part < 0 || part >= partitions {
			t.Errorf("delivery of partition %d, want 0..%d", part, partitions-1)
		}
		if len(by) != 1 {
			t.Errorf("partition %d received by %d Transports, want one", part, len(by))
		}
		for i := range by {
			used[i] = true
		}
	}
	t.Logf("partitions by Transport: %v", owner)
	if len(owner) != partitions || len(used) != len(trs) {
		t.Errorf("partitions %v: want all %d, spread over both Transports", owner, partitions)
	}

	if err := trs[0].Close(); err != nil {
		t.Fatal(err)
	}
	publishKeyedSeq(ctx, t, q, keys, 1)
	parts := map[int32]bool{}
	for got := 0; got < keys; got++ {
		m, err := trs[1].Pop(ctx, q, 10*time.Second)
		if err != nil || m == nil {
			t.Fatalf("after the other Transport closed, Pop %d of %d = %v, %v", got+1, keys, m, err)
		}
		parts[m.Partition] = true
		if err := trs[1].Ack(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if len(parts) != partitions {
		t.Errorf("after the other Transport closed, received partitions %v, want all %d", parts, partitions)
	}
}
