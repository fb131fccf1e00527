package pulsar

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

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
// or Exclusive subscription: one client consumer per partition topic,
// parts[i] of partition i, each with a receive channel of its own, so that
// one partition's messages never wait behind another's (DESIGN.md, "One
// lane per partition"). Deliveries are acknowledged through the consumer
// of their partition (receivedFrom); Ack and Nack here find it by the
// "-partition-<n>" suffix of the message's topic.
type partitionConsumers struct {
	parts []consumer
	once  sync.Once
}

// of returns the consumer of the partition topic a message came from.
func (pc *partitionConsumers) of(msg pulsar.Message) (consumer, bool) {
	topic := msg.Topic()
	i := strings.LastIndex(topic, partitionSuffix)
	if i < 0 {
		return nil, false
	}
	n, err := strconv.Atoi(topic[i+len(partitionSuffix):])
	if err != nil || n < 0 || n >= len(pc.parts) {
		return nil, false
	}
	return pc.parts[n], true
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
		for _, c := range pc.parts {
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
	// The partitions are subscribed at once, as the client's partitioned
	// consumer does: one after another, each partition's broker
	// dispatch would start a subscription round trip after the last (a
	// Failover subscription delays its first read after a consumer
	// becomes active by the same time for each).
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
		return nil, true, err
	}
	return &partitionConsumers{parts: parts}, true, nil
}

// consumerName returns a new consumer name for the partition consumers of
// one subscription.
func consumerName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "bq-" + hex.EncodeToString(b[:])
}
