package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// errStop ends a scan early without error.
var errStop = errors.New("stop scan")

// scanner reads every record of a topic that exists when the scan starts,
// without consuming it: nothing is committed or acknowledged.
type scanner interface {
	scan(ctx context.Context, topic string, fn func(*record) error) error
	io.Closer
}

// kafkaRecord converts a kafka-go message.
func kafkaRecord(m kafkago.Message) *record {
	r := &record{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Time: m.Time, Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, wire.Header{Key: h.Key, Value: string(h.Value)})
	}
	return r
}

// kafkaScanner reads each partition with a plain partition reader from
// its first offset to the high-water mark read at the start.
// With a cursor, each partition is read from the offset that consumer
// group committed instead (the live region of a DLQ after a redrive).
type kafkaScanner struct {
	k      *kafkaConn
	cursor string
}

func (s kafkaScanner) scan(ctx context.Context, topic string, fn func(*record) error) error {
	parts, err := s.k.partitions(ctx, topic)
	if err != nil {
		return err
	}
	first, next, err := s.k.bounds(ctx, topic, parts)
	if err != nil {
		return err
	}
	if s.cursor != "" {
		committed, err := s.k.committedOffsets(ctx, s.cursor, topic, parts)
		if err != nil {
			return err
		}
		for p, o := range committed {
			first[p] = max(first[p], o)
		}
	}
	for _, p := range parts {
		err := s.k.readRange(ctx, topic, p, first[p], next[p], func(m kafkago.Message) error { return fn(kafkaRecord(m)) })
		if errors.Is(err, errStop) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s kafkaScanner) Close() error { s.k.close(); return nil }

// pulsarRecord converts a Pulsar message.
func pulsarRecord(m pulsar.Message) *record {
	r := &record{Topic: m.Topic(), MessageID: m.ID().String(), Time: m.PublishTime(), Key: []byte(m.Key()), Value: m.Payload()}
	if !m.EventTime().IsZero() {
		r.Time = m.EventTime()
	}
	r.Headers = wire.MergeHeaders(nil, m.Properties())
	return r
}

// pulsarScanner reads a topic with a Reader from the earliest message:
// a Reader has no durable subscription, so nothing is acknowledged.
type pulsarScanner struct{ p *pulsarConn }

func (s pulsarScanner) scan(ctx context.Context, topic string, fn func(*record) error) error {
	rd, err := s.p.client.CreateReader(pulsar.ReaderOptions{Topic: s.p.topic(topic), StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		return fmt.Errorf("pulsar reader on %q: %w", s.p.topic(topic), err)
	}
	defer rd.Close()
	for rd.HasNext() {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		m, err := rd.Next(rctx)
		cancel()
		if err != nil {
			return fmt.Errorf("read %q: %w", s.p.topic(topic), err)
		}
		if err := fn(pulsarRecord(m)); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

func (s pulsarScanner) Close() error { s.p.client.Close(); return nil }

// openScanner connects to the broker of the flags.
func (c *connFlags) openScanner(ctx context.Context, u brokerURL) (scanner, error) {
	if u.Kind == kindKafka {
		k, err := c.kafka(ctx, u)
		if err != nil {
			return nil, err
		}
		return kafkaScanner{k: k}, nil
	}
	p, err := c.pulsar(ctx, u)
	if err != nil {
		return nil, err
	}
	return pulsarScanner{p}, nil
}
