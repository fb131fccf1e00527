package pulsar

import (
	"fmt"

	"github.com/apache/pulsar-client-go/pulsar"
)

// producerSlot holds a producer that is being, or has been, created. ready
// is closed once p or err is set.
type producerSlot struct {
	ready chan struct{}
	p     producer
	err   error
}

// consumerSlot is producerSlot for a consumer.
type consumerSlot struct {
	queue string
	ready chan struct{}
	c     consumer
	topic string
	err   error
	pre   *prefetcher // nil when c offers no receive channel (prefetch.go)
	// disc subscribes partitions added to the topic when c is a consumer
	// per partition (partitions.go); nil otherwise.
	disc *partitionDiscovery
}

// producerFor returns the producer of topic, creating it on first use.
// Once created, it is found without taking t.mu: every publish calls this,
// and concurrent publishers would otherwise queue on the lock.
func (t *Transport) producerFor(topic string) (producer, error) {
	if p, ok := t.made.Load(topic); ok && !t.closed.Load() {
		return p.(producer), nil
	}
	p, err := t.slot(t.producers, topic, t.client, topic)
	if err == nil {
		t.made.Store(topic, p)
	}
	return p, err
}

// retryProducerFor returns the producer Retry republishes through for
// messages of queue (on topic), or nil when Retry has no way to republish.
func (t *Transport) retryProducerFor(queue, topic string) (producer, error) {
	if p, ok := t.given[queue]; ok {
		return p, nil
	}
	switch {
	case t.retry == nil:
		return nil, nil
	case t.retry == t.client:
		// WithRepublishRetries: the topic's own producer serves.
		return t.producerFor(topic)
	}
	return t.slot(t.retries, queue, t.retry, topic)
}

// slot looks key up in m (a map of t guarded by t.mu) and creates the
// producer from c on first use. Creation runs outside the lock; concurrent
// callers wait for it. A failed creation is forgotten so that the next call
// tries again.
func (t *Transport) slot(m map[string]*producerSlot, key string, c client, topic string) (producer, error) {
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return nil, errClosed("create producer for " + topic)
	}
	if s, ok := m[key]; ok {
		t.mu.Unlock()
		<-s.ready
		return s.p, s.err
	}
	s := &producerSlot{ready: make(chan struct{})}
	m[key] = s
	t.mu.Unlock()

	name := t.cfg.dedupName
	if name != "" && c != t.client {
		name += "-retry"
	}
	opts := t.producerOptions(topic, name)
	s.p, s.err = c.CreateProducer(opts)
	switch {
	case s.err == nil && name != "":
		s.p, s.err = deduplicating(s.p)
	case s.err == nil:
		s.p = newOutcomeProducer(s.p, &opts)
	}
	if s.err != nil {
		s.err = fmt.Errorf("pulsar: create producer for %s: %w", topic, s.err)
		s.p = nil
	}
	close(s.ready)

	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		// Close took this slot and closes s.p once ready.
		return nil, errClosed("create producer for " + topic)
	}
	if s.err != nil && m[key] == s {
		delete(m, key)
	}
	return s.p, s.err
}

// producerOptions returns the options of a producer the Transport creates
// for topic; name is its deduplicating producer name, or "" for a plain
// producer.
func (t *Transport) producerOptions(topic, name string) pulsar.ProducerOptions {
	opts := pulsar.ProducerOptions{
		Topic:                   topic,
		BatchingMaxPublishDelay: DefaultBatchingMaxPublishDelay,
		// Every write of a plain producer waits for the broker's receipt:
		// batching would only wrap each message in a batch of one and
		// encode its properties twice (see the defaults in options.go). A deduplicating producer sends
		// asynchronously (dedup.go), but does not batch either: the
		// client's batches mix keys, and its key-based batches overlap in
		// sequence ids, which deduplication cannot take.
		DisableBatching: true,
	}
	if name != "" {
		dedupOptions(&opts, name)
	}
	if t.cfg.producerOptions != nil {
		t.cfg.producerOptions(&opts)
	}
	return opts
}

// consumerFor returns the consumer of queue, subscribing on first use.
func (t *Transport) consumerFor(queue string) (*consumerSlot, error) {
	// Every Pop calls this: a consumer that subscribed is found without
	// taking mu, which Close takes before it closes the consumers.
	if s := t.popped.Load(); s != nil && s.queue == queue && !t.closed.Load() {
		return s, nil
	}
	if s, ok := t.subscribed.Load(queue); ok && !t.closed.Load() {
		t.popped.Store(s.(*consumerSlot))
		return s.(*consumerSlot), nil
	}
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return nil, errClosed("subscribe to " + queue)
	}
	if s, ok := t.consumers[queue]; ok {
		t.mu.Unlock()
		<-s.ready
		if s.err != nil {
			return nil, s.err
		}
		return s, nil
	}
	topic := t.Topic(queue)
	if t.cfg.maxAttempts > 1 && !t.cfg.nackAdvancesRedelivery() && t.given[queue] == nil && t.retry == nil {
		t.mu.Unlock()
		return nil, invalid("queue %s: max attempts is %d on a %s subscription without a retry producer for it",
			queue, t.cfg.maxAttempts, subscriptionTypeName(t.cfg.subType))
	}
	s := &consumerSlot{queue: queue, ready: make(chan struct{}), topic: topic}
	t.consumers[queue] = s
	t.mu.Unlock()

	opts := pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            t.cfg.subscription,
		Type:                        t.cfg.subType,
		SubscriptionInitialPosition: t.cfg.initialPosition,
		NackRedeliveryDelay:         t.cfg.nackDelay,
	}
	if t.cfg.consumerOptions != nil {
		t.cfg.consumerOptions(&opts)
	}
	pc, perPartition, err := t.subscribePartitions(opts)
	switch {
	case perPartition && err == nil:
		s.c = pc
		s.pre = startPartitionPrefetch(queue, t.cfg.subscription, s, pc)
		s.disc = t.startPartitionDiscovery(pc, s.pre)
	case perPartition:
		s.err = fmt.Errorf("pulsar: subscribe %s to %s: %w", t.cfg.subscription, topic, err)
	default:
		s.c, s.err = t.client.Subscribe(opts)
		if s.err != nil {
			s.err = fmt.Errorf("pulsar: subscribe %s to %s: %w", t.cfg.subscription, topic, s.err)
			s.c = nil
		} else if mc, ok := s.c.(messageChan); ok {
			s.pre = startPrefetch(queue, t.cfg.subscription, s, mc.Chan())
		}
	}
	close(s.ready)

	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		// Close took this slot and closes s.c once ready.
		return nil, errClosed("subscribe to " + queue)
	}
	if s.err != nil {
		if t.consumers[queue] == s {
			delete(t.consumers, queue)
		}
		return nil, s.err
	}
	t.subscribed.Store(queue, s)
	return s, nil
}
