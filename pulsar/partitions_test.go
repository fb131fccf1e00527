package pulsar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// partClient is a client of one partitioned topic, "q" with parts
// partitions: a subscription of the topic itself gets shared, whose
// receive channel interleaves the partitions as the client's partitioned
// consumer may (a long run of one partition first); a subscription of a
// partition topic gets that partition's consumer alone.
type partClient struct {
	*fakeClient
	shared *chanConsumer
	parts  []*chanConsumer
	failOn int // the partition whose subscription fails; -1: none

	mu      sync.Mutex
	subs    []pulsar.ConsumerOptions
	listErr error // what TopicPartitions of q returns while set
}

func partitionTopic(i int) string { return fmt.Sprintf("q-partition-%d", i) }

func newPartChan(buffer int) *chanConsumer {
	return &chanConsumer{
		fakeConsumer: &fakeConsumer{ch: make(chan pulsar.Message, 1), done: make(chan struct{})},
		cm:           make(chan pulsar.ConsumerMessage, buffer),
	}
}

func newPartClient(parts, buffer int) *partClient {
	c := &partClient{fakeClient: newFakeClient(), shared: newPartChan(parts * buffer), failOn: -1}
	for range parts {
		c.parts = append(c.parts, newPartChan(buffer))
	}
	return c
}

// addPartition adds a partition to q, as an administrator raising its
// partition count does, whose consumer holds up to buffer messages.
func (c *partClient) addPartition(buffer int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parts = append(c.parts, newPartChan(buffer))
}

// failListing makes TopicPartitions of q fail with err until called with
// nil.
func (c *partClient) failListing(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listErr = err
}

func (c *partClient) TopicPartitions(topic string) ([]string, error) {
	if topic != "q" {
		return []string{topic}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listErr != nil {
		return nil, c.listErr
	}
	var names []string
	for i := range c.parts {
		names = append(names, partitionTopic(i))
	}
	return names, nil
}

func (c *partClient) Subscribe(opts pulsar.ConsumerOptions) (consumer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, opts)
	if opts.Topic == "q" {
		return c.shared, nil
	}
	for i, pc := range c.parts {
		if opts.Topic == partitionTopic(i) {
			if i == c.failOn {
				return nil, errors.New("consumer busy")
			}
			return pc, nil
		}
	}
	return nil, fmt.Errorf("no topic %s", opts.Topic)
}

func (c *partClient) subscriptions() []pulsar.ConsumerOptions {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]pulsar.ConsumerOptions(nil), c.subs...)
}

// fill queues n messages of partition part, entries from..from+n-1, on
// the partition's own channel and on the shared one; a consumer of one
// partition topic reports partition 0 in its message IDs, as the client's
// does.
func (c *partClient) fill(part, from, n int) {
	for e := from; e < from+n; e++ {
		m := &fakeMessage{payload: []byte(envelope), id: pulsar.NewMessageID(1, int64(e), -1, 0)}
		c.parts[part].cm <- pulsar.ConsumerMessage{Message: m}
		c.shared.cm <- pulsar.ConsumerMessage{Message: &fakeMessage{
			payload: m.payload, id: pulsar.NewMessageID(1, int64(e), -1, int32(part))}}
	}
}

func partTransport(t *testing.T, c *partClient, st pulsar.SubscriptionType, opts ...Option) *Transport {
	t.Helper()
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = st, true
	cfg.maxAttempts = 1 // no retry producer needed
	for _, o := range opts {
		o(&cfg)
	}
	if err := errors.Join(cfg.errs...); err != nil {
		t.Fatal(err)
	}
	tr := newTransport(cfg, c, false, nil, nil)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// A partition whose messages the client delivers first must not keep the
// others' lanes waiting: on a Failover subscription of a partitioned
// topic, each partition is received through a consumer of its own, so
// that the next message of every partition is prepared for its lane
// (ReceiveReadyFrom) while a long run of another partition waits, each
// partition in its order, reported with its partition index, and
// acknowledged through its partition's consumer.
func TestFailoverLaneFindsItsPartitionBehindAnotherPartitionsRun(t *testing.T) {
	const parts, run, each = 6, 300, 5
	c := newPartClient(parts, run+parts*each)
	c.fill(0, 0, run)
	for part := 1; part < parts; part++ {
		c.fill(part, 0, each)
	}
	tr := partTransport(t, c, pulsar.Failover)
	ctx := context.Background()
	first, err := tr.Pop(ctx, "q", time.Second)
	if err != nil || first == nil {
		t.Fatalf("first Pop = %v, %v", first, err)
	}
	if !tr.NotifyReady("q", func() {}) {
		t.Fatal("NotifyReady = false")
	}
	for part := int32(1); part < parts; part++ {
		if first.Partition == part {
			continue // handed out through Pop already
		}
		for e := int64(0); e < each; e++ {
			var m *babelqueue.ReceivedMessage
			for deadline := time.Now().Add(2 * time.Second); m == nil; time.Sleep(time.Millisecond) {
				if got, ok := tr.ReceiveReadyFrom("q", part); ok {
					m = got
				} else if time.Now().After(deadline) {
					t.Fatalf("partition %d: entry %d not prepared within 2s behind partition 0's run of %d", part, e, run)
				}
			}
			if m.Partition != part || Message(m).ID().EntryID() != e {
				t.Fatalf("ReceiveReadyFrom(%d) = partition %d entry %d; want entry %d", part, m.Partition, Message(m).ID().EntryID(), e)
			}
			if err := tr.Ack(ctx, m); err != nil {
				t.Fatal(err)
			}
			if acked, _ := c.parts[part].counts(); acked != int(e)+1 {
				t.Fatalf("partition %d's consumer acknowledged %d of %d", part, acked, e+1)
			}
		}
	}
	subs := c.subscriptions()
	if len(subs) != parts {
		t.Fatalf("%d subscriptions, want one per partition (%d)", len(subs), parts)
	}
	for i, o := range subs {
		if o.Name == "" || o.Name != subs[0].Name || o.Type != pulsar.Failover || o.SubscriptionName != tr.cfg.subscription {
			t.Errorf("subscription %d: name %q type %v subscription %q; want the name of the others, Failover, %q",
				i, o.Name, o.Type, o.SubscriptionName, tr.cfg.subscription)
		}
	}
}

// Each partition's feeder holds at most its share of the prefetch depth,
// so the prefetcher's buffer stays bounded however many messages the
// client's consumers hold.
func TestPartitionFeedersHoldTheirShare(t *testing.T) {
	const parts, n = 4, 100
	c := newPartClient(parts, n)
	for part := range parts {
		c.fill(part, 0, n)
	}
	tr := partTransport(t, c, pulsar.Exclusive)
	if _, err := tr.consumerFor("q"); err != nil {
		t.Fatal(err)
	}
	pre := tr.consumers["q"].pre
	share := prefetchDepth / parts
	deadline := time.Now().Add(5 * time.Second)
	for pre.held() < parts*share {
		if time.Now().After(deadline) {
			t.Fatalf("held %d, want %d (every partition's share)", pre.held(), parts*share)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if got := pre.held(); got != parts*share {
		t.Errorf("held %d, want at most %d", got, parts*share)
	}
	for part := range parts {
		if got, want := len(c.parts[part].cm), n-share; got != want {
			t.Errorf("partition %d: %d left in its channel, want %d", part, got, want)
		}
	}
}

// Shared and Key_Shared subscriptions, and a topic that is not
// partitioned, keep the client's one consumer.
func TestPartitionConsumersOnlyForFailoverAndExclusive(t *testing.T) {
	for _, st := range []pulsar.SubscriptionType{pulsar.Shared, pulsar.KeyShared} {
		c := newPartClient(3, 1)
		tr := partTransport(t, c, st)
		if _, err := tr.consumerFor("q"); err != nil {
			t.Fatal(err)
		}
		if subs := c.subscriptions(); len(subs) != 1 || subs[0].Topic != "q" {
			t.Errorf("%s: subscriptions %+v; want one of q", subscriptionTypeName(st), subs)
		}
	}
	c := newPartClient(3, 1)
	tr := partTransport(t, c, pulsar.Failover)
	if _, err := tr.consumerFor("other"); err == nil {
		t.Fatal("subscribing a topic the fake does not know succeeded")
	}
	if subs := c.subscriptions(); len(subs) != 1 || subs[0].Topic != "other" {
		t.Errorf("subscriptions of a topic that is not partitioned %+v; want one", subs)
	}
}

// A partition that cannot be subscribed fails the subscription, and the
// partitions subscribed before it are closed; Close closes every
// partition's consumer after stopping the feeders.
func TestPartitionConsumersCloseTogether(t *testing.T) {
	c := newPartClient(4, 1)
	c.failOn = 2
	tr := partTransport(t, c, pulsar.Failover)
	if _, err := tr.Pop(context.Background(), "q", time.Millisecond); err == nil {
		t.Fatal("Pop with a partition that cannot be subscribed succeeded")
	}
	for i := range 2 {
		if !isClosed(c.parts[i]) {
			t.Errorf("partition %d subscribed before the failure left open", i)
		}
	}

	c = newPartClient(4, 1)
	tr = partTransport(t, c, pulsar.Failover)
	if _, err := tr.consumerFor("q"); err != nil {
		t.Fatal(err)
	}
	pre := tr.consumers["q"].pre
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pre.done:
	default:
		t.Error("feeders still running after Close")
	}
	for i, pc := range c.parts {
		if !isClosed(pc) {
			t.Errorf("partition %d's consumer left open by Close", i)
		}
	}
}

func isClosed(c *chanConsumer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

type topicMessage struct {
	*fakeMessage
	topic string
}

func (m topicMessage) Topic() string { return m.topic }

// Ack and Nack of the partition consumers themselves find the partition by
// the message's topic; a message of another topic is refused.
func TestPartitionConsumersAckByTopic(t *testing.T) {
	c := newPartClient(3, 1)
	tr := partTransport(t, c, pulsar.Failover)
	s, err := tr.consumerFor("q")
	if err != nil {
		t.Fatal(err)
	}
	pc := s.c.(*partitionConsumers)
	m := topicMessage{&fakeMessage{}, "persistent://public/default/q-partition-2"}
	if err := pc.Ack(m); err != nil {
		t.Fatal(err)
	}
	pc.Nack(m)
	if acked, nacked := c.parts[2].counts(); acked != 1 || nacked != 1 {
		t.Errorf("partition 2 acknowledged %d, nacked %d; want 1, 1", acked, nacked)
	}
	if err := pc.Ack(topicMessage{&fakeMessage{}, "q-partition-3"}); err == nil {
		t.Error("Ack of a partition the consumer does not have succeeded")
	}
	if _, err := pc.Receive(context.Background()); !errors.Is(err, errPartitionReceive) {
		t.Errorf("Receive = %v, want errPartitionReceive", err)
	}
}
