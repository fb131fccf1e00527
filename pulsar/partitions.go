package pulsar

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// topicPartitioner lists the partition topics of a topic (the topic
// itself when it is not partitioned); realClient is one.
type topicPartitioner interface {
	TopicPartitions(topic string) ([]string, error)
}

func (r realClient) TopicPartitions(topic string) ([]string, error) {
	return r.c.TopicPartitions(topic)
}

// errPartitionReceive is what Receive of partitionConsumers returns: its
// messages are received through the prefetcher's feeders only.
var errPartitionReceive = errors.New("pulsar: a consumer per partition is received through its prefetcher")

// partitionConsumers is the consumer of a partitioned topic on a Failover
// or Exclusive subscription: one client consumer per partition topic, the
// i-th of partition i, each with a receive channel of its own, so that one
// partition's messages never wait behind another's (DESIGN.md,
// "Receive", the paragraph "One lane per partition"). Deliveries are acknowledged through the consumer of
// their partition (receivedFrom); Ack and Nack here find it by the
// "-partition-<n>" suffix of the message's topic.
//
// Partitions added to the topic later join through the Transport's
// discovery (discoverPartitions), its only writer.
type partitionConsumers struct {
	parts  atomic.Pointer[[]consumer]
	opts   pulsar.ConsumerOptions // the subscription's: Topic the partitioned topic, Name set
	lister topicPartitioner
	once   sync.Once
}

// list returns the partitions' consumers, partition i's at i.
func (pc *partitionConsumers) list() []consumer { return *pc.parts.Load() }

// add appends the consumers of the partitions that follow the listed ones.
func (pc *partitionConsumers) add(cs []consumer) {
	parts := append(slices.Clip(pc.list()), cs...)
	pc.parts.Store(&parts)
}

// of returns the consumer of the partition topic a message came from.
func (pc *partitionConsumers) of(msg pulsar.Message) (consumer, bool) {
	topic := msg.Topic()
	i := strings.LastIndex(topic, partitionSuffix)
	if i < 0 {
		return nil, false
	}
	parts := pc.list()
	n, err := strconv.Atoi(topic[i+len(partitionSuffix):])
	if err != nil || n < 0 || n >= len(parts) {
		return nil, false
	}
	return parts[n], true
}

// partitionSuffix ends the name of a partition topic, before its index.
const partitionSuffix = "-partition-"

func (pc *partitionConsumers) Receive(context.Context) (pulsar.Message, error) {
	return nil, errPartitionReceive
}

func (pc *partitionConsumers) Ack(msg pulsar.Message) error {
	c, ok := pc.of(msg)
	if !ok {
		return fmt.Errorf("pulsar: ack of a message of %s: not a partition of this consumer", msg.Topic())
	}
	return c.Ack(msg)
}

func (pc *partitionConsumers) Nack(msg pulsar.Message) {
	if c, ok := pc.of(msg); ok {
		c.Nack(msg)
	}
}

// Close closes every partition's consumer; safe to call more than once.
func (pc *partitionConsumers) Close() {
	pc.once.Do(func() {
		for _, c := range pc.list() {
			c.Close()
		}
	})
}

// subscribePartitions subscribes a consumer to each partition of opts's
// topic when the subscription keeps one active consumer per partition
// (Failover, Exclusive), the topic has two partitions or more, and opts
// name one topic with no option the client's partitioned consumer handles
// across partitions (a message channel, dead-letter or retry topics). It
// reports false, having subscribed nothing, when one of these does not
// hold; then the caller subscribes opts as they are.
//
// Every partition consumer has the same consumer name, as the client's
// partitioned consumer gives its partitions, so that the broker's Failover
// assignment spreads the partitions over the subscribed processes the
// same way. The partitions are subscribed concurrently; when one cannot
// be, those that were are closed and the whole subscription fails.
func (t *Transport) subscribePartitions(opts pulsar.ConsumerOptions) (*partitionConsumers, bool, error) {
	if (opts.Type != pulsar.Failover && opts.Type != pulsar.Exclusive) || opts.Topic == "" ||
		len(opts.Topics) > 0 || opts.TopicsPattern != "" || opts.MessageChannel != nil ||
		opts.DLQ != nil || opts.RetryEnable || opts.EnableZeroQueueConsumer {
		return nil, false, nil
	}
	lister, ok := t.client.(topicPartitioner)
	if !ok {
		return nil, false, nil
	}
	topics, err := lister.TopicPartitions(opts.Topic)
	if err != nil || len(topics) < 2 {
		// The client's own subscription reports a lookup that fails.
		return nil, false, nil
	}
	if opts.Name == "" {
		opts.Name = consumerName()
	}
	parts, err := t.subscribeEach(opts, topics)
	if err != nil {
		return nil, true, err
	}
	pc := &partitionConsumers{opts: opts, lister: lister}
	pc.parts.Store(&parts)
	return pc, true, nil
}

// subscribeEach subscribes a consumer with opts to each of topics, at
// once, as the client's partitioned consumer does: one after another, each
// partition's broker dispatch would start a subscription round trip after
// the last (a Failover subscription delays its first read after a consumer
// becomes active by the same time for each). When one cannot be
// subscribed, those that were are closed and the error names it.
func (t *Transport) subscribeEach(opts pulsar.ConsumerOptions, topics []string) ([]consumer, error) {
	parts := make([]consumer, len(topics))
	errs := make([]error, len(topics))
	var wg sync.WaitGroup
	for i, topic := range topics {
		wg.Add(1)
		go func() {
			defer wg.Done()
			po := opts
			po.Topic = topic
			c, err := t.client.Subscribe(po)
			if err == nil {
				if _, ok := c.(messageChan); !ok {
					c.Close()
					c, err = nil, errors.New("the client's consumer offers no receive channel")
				}
			}
			if err != nil {
				err = fmt.Errorf("partition %s: %w", topic, err)
			}
			parts[i], errs[i] = c, err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range parts {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return parts, nil
}

// defaultPartitionDiscovery is how often a consumer per partition looks
// for new partitions when ConsumerOptions.AutoDiscoveryPeriod is not set:
// the client's own default for its partitioned consumer.
const defaultPartitionDiscovery = time.Minute

// partitionDiscovery is the goroutine that subscribes the partitions
// added to a topic after its consumers per partition subscribed
// (discoverPartitions). The Transport stops it (halt) before it halts the
// prefetcher and closes the consumers.
type partitionDiscovery struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startPartitionDiscovery starts the discovery of partitions added to
// pc's topic, every ConsumerOptions.AutoDiscoveryPeriod of the
// subscription (defaultPartitionDiscovery when not set) on the
// Transport's clock; each new partition's consumer joins pc and its feeder
// joins pre.
func (t *Transport) startPartitionDiscovery(pc *partitionConsumers, pre *prefetcher) *partitionDiscovery {
	period := pc.opts.AutoDiscoveryPeriod
	if period <= 0 {
		period = defaultPartitionDiscovery
	}
	d := &partitionDiscovery{stop: make(chan struct{}), done: make(chan struct{})}
	go t.discoverPartitions(d, pc, pre, period)
	return d
}

// halt stops the discovery and waits until it has returned; a subscription
// of new partitions in progress finishes first, and its consumers are
// closed. Safe to call more than once.
func (d *partitionDiscovery) halt() {
	d.once.Do(func() { close(d.stop) })
	<-d.done
}

// discoverPartitions lists pc's topic every period and adds the
// partitions beyond those pc has (addPartitions), until d is halted.
func (t *Transport) discoverPartitions(d *partitionDiscovery, pc *partitionConsumers, pre *prefetcher, period time.Duration) {
	defer close(d.done)
	for {
		timer := t.cfg.clock.NewTimer(period)
		select {
		case <-d.stop:
			timer.Stop()
			return
		case <-timer.C():
		}
		t.addPartitions(d, pc, pre)
	}
}

// addPartitions subscribes the partitions of pc's topic beyond those pc
// has, with pc's options, and starts their feeders in pre. Partition
// counts only grow in Pulsar: a shorter list changes nothing. A listing or
// a subscription that fails is logged and tried again next period.
func (t *Transport) addPartitions(d *partitionDiscovery, pc *partitionConsumers, pre *prefetcher) {
	topic := pc.opts.Topic
	topics, err := pc.lister.TopicPartitions(topic)
	if err != nil {
		t.cfg.logger.Warn("babelqueue pulsar: list partitions; trying again next period", "topic", topic, "err", err)
		return
	}
	have := len(pc.list())
	if len(topics) <= have {
		return
	}
	added, err := t.subscribeEach(pc.opts, topics[have:])
	if err != nil {
		t.cfg.logger.Warn("babelqueue pulsar: subscribe new partitions; trying again next period",
			"topic", topic, "partitions", len(topics), "err", err)
		return
	}
	select {
	case <-d.stop:
		for _, c := range added {
			c.Close()
		}
		return
	default:
	}
	pc.add(added)
	pre.addPartitionFeeders(have, added)
	t.cfg.logger.Info("babelqueue pulsar: consuming new partitions", "topic", topic, "partitions", len(topics))
}

// consumerName returns a new consumer name for the partition consumers of
// one subscription.
func consumerName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "bq-" + hex.EncodeToString(b[:])
}
