package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	pulsarclient "github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"
	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// workPartitions is the partition count of every chaos work topic.
const workPartitions = 6

// newSide builds the side of broker for the run (no bq binary: the
// scenarios that use it build their own side).
func newSide(broker, run string, log *slog.Logger) (side, error) {
	switch broker {
	case "kafka":
		return newKafkaSide(run, workPartitions, "", log)
	case "pulsar":
		return newPulsarSide(run, workPartitions)
	}
	return nil, fmt.Errorf("-broker must be kafka or pulsar, not %q", broker)
}

// storedIDs reads the whole work topic back and counts the records of each
// meta.id.
func storedIDs(ctx context.Context, s side) (map[string]int, error) {
	count := map[string]int{}
	switch s := s.(type) {
	case *kafkaSide:
		msgs, err := s.readTopic(ctx, s.topic)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			count[idOfBody(m.Value)]++
		}
	case *pulsarSide:
		c, err := pulsarclient.NewClient(pulsarclient.ClientOptions{URL: s.url, Logger: pulsarlog.NewLoggerWithSlog(s.log)})
		if err != nil {
			return nil, fmt.Errorf("pulsar client: %w", err)
		}
		defer c.Close()
		// A reader per partition, to its end: deterministic, unlike a
		// subscription waited on until it is idle.
		for i := range s.partitions {
			part := fmt.Sprintf("persistent://public/default/%s-partition-%d", s.topic, i)
			r, err := c.CreateReader(pulsarclient.ReaderOptions{Topic: part, StartMessageID: pulsarclient.EarliestMessageID()})
			if err != nil {
				return nil, fmt.Errorf("reader on %s: %w", part, err)
			}
			for r.HasNext() {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				m, err := r.Next(rctx)
				cancel()
				if err != nil {
					r.Close()
					return nil, fmt.Errorf("read %s: %w", part, err)
				}
				count[idOfBody(m.Payload())]++
			}
			r.Close()
		}
	default:
		return nil, fmt.Errorf("no read-back for %T", s)
	}
	return count, nil
}

func idOfBody(b []byte) string {
	env, err := babelqueue.Decode(b)
	if err != nil {
		return "undecodable"
	}
	return env.Meta.ID
}
