package pulsar

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// A partition added to the topic after a Failover subscription subscribed
// its partitions is subscribed, with the others' options and consumer
// name, one discovery period (ConsumerOptions.AutoDiscoveryPeriod) later,
// and its messages are handed out and acknowledged through its own
// consumer. A listing that fails is logged and tried again next period.
// Close stops the discovery before closing every partition's consumer,
// the new one's included.
func TestPartitionAddedAfterSubscribeIsConsumed(t *testing.T) {
	const period = 5 * time.Second
	c := newPartClient(2, 4)
	clock := bqtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	var logs bqtest.SyncBuffer
	tr := partTransport(t, c, pulsar.Failover,
		WithClock(clock),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		WithConsumerOptions(func(o *pulsar.ConsumerOptions) { o.AutoDiscoveryPeriod = period }))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := tr.consumerFor("q")
	if err != nil {
		t.Fatal(err)
	}
	if err := clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatalf("no discovery timer after subscribing: %v", err)
	}

	c.addPartition(4)
	c.fill(2, 0, 1)
	c.failListing(errors.New("lookup failed"))
	clock.Advance(period - time.Millisecond)
	if n := clock.Timers(); n != 1 {
		t.Fatalf("%d timers before one period passed, want the discovery's one", n)
	}
	clock.Advance(time.Millisecond) // the listing fails
	if err := clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatalf("discovery stopped after a failed listing: %v", err)
	}
	if subs := c.subscriptions(); len(subs) != 2 {
		t.Fatalf("%d subscriptions after a failed listing, want the first 2", len(subs))
	}
	if !strings.Contains(logs.String(), "lookup failed") {
		t.Errorf("failed listing not logged; log:\n%s", logs.String())
	}
	if m, err := tr.Pop(ctx, "q", 20*time.Millisecond); err != nil || m != nil {
		t.Fatalf("Pop before the partition was discovered = %v, %v; want nothing", m, err)
	}

	c.failListing(nil)
	clock.Advance(period)
	m, err := tr.Pop(ctx, "q", 5*time.Second)
	if err != nil || m == nil {
		t.Fatalf("Pop after one period = %v, %v; want the new partition's message", m, err)
	}
	if m.Partition != 2 {
		t.Fatalf("Pop = partition %d, want 2 (the new one)", m.Partition)
	}
	if err := tr.Ack(ctx, m); err != nil {
		t.Fatal(err)
	}
	if acked, _ := c.parts[2].counts(); acked != 1 {
		t.Errorf("the new partition's consumer acknowledged %d, want 1", acked)
	}
	subs := c.subscriptions()
	if len(subs) != 3 || subs[2].Topic != partitionTopic(2) {
		t.Fatalf("subscriptions %d (last %q), want 3, the last of %s", len(subs), subs[len(subs)-1].Topic, partitionTopic(2))
	}
	if o := subs[2]; o.Name != subs[0].Name || o.Type != pulsar.Failover || o.SubscriptionName != subs[0].SubscriptionName {
		t.Errorf("new partition subscribed as %q %v %q; want the others' %q %v %q",
			o.Name, o.Type, o.SubscriptionName, subs[0].Name, subs[0].Type, subs[0].SubscriptionName)
	}
	if err := clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatalf("discovery stopped after adding a partition: %v", err)
	}

	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.disc.done:
	default:
		t.Error("discovery still running after Close")
	}
	if n := clock.Timers(); n != 0 {
		t.Errorf("%d timers left after Close, want none", n)
	}
	clock.Advance(period)
	if subs := c.subscriptions(); len(subs) != 3 {
		t.Errorf("%d subscriptions after Close and a period, want 3", len(subs))
	}
	for i, pc := range c.parts {
		if !isClosed(pc) {
			t.Errorf("partition %d's consumer left open by Close", i)
		}
	}
}

// When partitions join, the feeders share the prefetch depth anew, so
// that the prefetcher holds no more than it did with fewer partitions.
func TestPartitionFeedersShareTheDepthWithNewPartitions(t *testing.T) {
	const before, after, n = 2, 4, 100
	c := newPartClient(before, n)
	c.shared = newPartChan(after * n) // fill queues every partition's messages there too
	clock := bqtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	tr := partTransport(t, c, pulsar.Exclusive, WithClock(clock))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := tr.consumerFor("q"); err != nil {
		t.Fatal(err)
	}
	for range after - before {
		c.addPartition(n)
	}
	if err := clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(defaultPartitionDiscovery) // the client's default period
	// The next period's timer is set once the partitions joined.
	if err := clock.WaitForTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if subs := c.subscriptions(); len(subs) != after {
		t.Fatalf("%d subscriptions, want %d", len(subs), after)
	}
	for part := range after {
		c.fill(part, 0, n)
	}
	pre := tr.consumers["q"].pre
	share := prefetchDepth / after
	for pre.held() < after*share {
		if ctx.Err() != nil {
			t.Fatalf("held %d, want %d (every partition's share)", pre.held(), after*share)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if got := pre.held(); got != after*share {
		t.Errorf("held %d, want at most %d (prefetchDepth shared by %d partitions)", got, after*share, after)
	}
	for part := range after {
		if got, want := len(c.parts[part].cm), n-share; got != want {
			t.Errorf("partition %d: %d left in its channel, want %d", part, got, want)
		}
	}
}
