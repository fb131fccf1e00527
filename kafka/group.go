package kafka

import (
	"context"
	"errors"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// groupMember is a consumer-group membership that yields one generation
// per rebalance. The Reinjector uses it instead of a group Reader because it
// must know when partitions are revoked.
type groupMember interface {
	// Next blocks until the member has the assignments of a new
	// generation; the previous generation's functions have all returned.
	Next(ctx context.Context) (groupGeneration, error)
	Close() error
}

// groupGeneration is one generation of a groupMember.
type groupGeneration interface {
	Assignments() map[string][]kafkago.PartitionAssignment
	// Start runs fn in a goroutine whose ctx ends with the generation; the
	// next generation waits for fn to return.
	Start(fn func(ctx context.Context))
	// CommitOffsets commits the next offset to read per topic and partition.
	CommitOffsets(offsets map[string]map[int]int64) error
	// OpenPartition returns a reader of one partition from offset (or a
	// relative offset such as kafkago.FirstOffset), buffering at most
	// buffer records.
	OpenPartition(topic string, partition int, offset int64, buffer int) partitionReader
}

// partitionReader reads one partition in offset order.
type partitionReader interface {
	FetchMessage(ctx context.Context) (kafkago.Message, error)
	Close() error
}

// newKafkaMember joins groupID on the brokers for topics, with the
// transport's session, heartbeat and rebalance timeouts. A partition the
// group has no committed offset for starts at startOffset
// (kafkago.FirstOffset or kafkago.LastOffset).
func (t *Transport) newKafkaMember(groupID string, topics []string, startOffset int64) (groupMember, error) {
	logger, errorLogger := kafkaLoggers(t.cfg.log())
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID:                groupID,
		Brokers:           t.cfg.brokers,
		Dialer:            t.dialer,
		Topics:            topics,
		StartOffset:       startOffset,
		HeartbeatInterval: t.cfg.heartbeatInterval,
		SessionTimeout:    t.cfg.sessionTimeout,
		RebalanceTimeout:  t.cfg.rebalanceTimeout,
		JoinGroupBackoff:  500 * time.Millisecond,
		Logger:            logger,
		ErrorLogger:       errorLogger,
	})
	if err != nil {
		return nil, err
	}
	return &kafkaMember{cg: cg, t: t}, nil
}

type kafkaMember struct {
	cg *kafkago.ConsumerGroup
	t  *Transport
}

func (m *kafkaMember) Next(ctx context.Context) (groupGeneration, error) {
	gen, err := m.cg.Next(ctx)
	if err != nil {
		if errors.Is(err, kafkago.ErrGroupClosed) && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return &kafkaGeneration{gen: gen, t: m.t}, nil
}

func (m *kafkaMember) Close() error { return m.cg.Close() }

type kafkaGeneration struct {
	gen *kafkago.Generation
	t   *Transport
}

func (g *kafkaGeneration) Assignments() map[string][]kafkago.PartitionAssignment {
	return g.gen.Assignments
}

func (g *kafkaGeneration) Start(fn func(ctx context.Context)) { g.gen.Start(fn) }

func (g *kafkaGeneration) CommitOffsets(offsets map[string]map[int]int64) error {
	return g.gen.CommitOffsets(offsets)
}

// OpenPartition's reader gives a record with an empty key a non-nil empty
// Key (keyReader): its connections are fetchTaps reading every record's
// key length from its own fetches.
func (g *kafkaGeneration) OpenPartition(topic string, partition int, offset int64, buffer int) partitionReader {
	keys := newEmptyKeys(topic, partition)
	r := g.openPartitionWith(tappedDialer(g.t.dialer, nil, keys.add), topic, partition, offset, buffer, 1, defaultFetchMaxWait)
	return &keyReader{partitionReader: r, keys: keys}
}

// defaultFetchMaxWait is how long a partition fetch that gathers nothing
// waits for a record before the broker answers it empty.
const defaultFetchMaxWait = 250 * time.Millisecond

// openPartitionWith opens a reader of one partition on the connections of
// dialer, whose fetches wait for minBytes or maxWait: the broker answers a
// fetch once minBytes are ready or maxWait elapsed.
func (g *kafkaGeneration) openPartitionWith(dialer *kafkago.Dialer, topic string, partition int, offset int64, buffer, minBytes int, maxWait time.Duration) *kafkago.Reader {
	logger, _ := kafkaLoggers(g.t.cfg.log())
	errorLogger := partitionErrorLogger{g.t.cfg.log()}
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:         g.t.cfg.brokers,
		Dialer:          dialer,
		Topic:           topic,
		Partition:       partition,
		QueueCapacity:   buffer,
		MinBytes:        minBytes,
		MaxBytes:        1 << 20,
		MaxWait:         maxWait,
		ReadBackoffMin:  10 * time.Millisecond,
		ReadBackoffMax:  250 * time.Millisecond,
		ReadLagInterval: -1,
		Logger:          logger,
		ErrorLogger:     errorLogger,
	})
	if err := r.SetOffset(offset); err != nil {
		g.t.cfg.log().Warn("kafka: set partition offset", "topic", topic, "partition", partition, "offset", offset, "err", err)
	}
	return r
}
