package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/babelqueue/babelqueue-go/examples/orderstatus"
	"github.com/segmentio/kafka-go"
)

// readTopic reads every record of the topic's partitions, from offset 0 up
// to each partition's high watermark at the time of the call.
func readTopic(ctx context.Context, c *kafka.Client, topic string, partitions int) ([]kafka.Message, error) {
	var out []kafka.Message
	for p := range partitions {
		var offset int64
		for {
			resp, err := c.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: p, Offset: offset,
				MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 50 * time.Millisecond})
			if err != nil {
				return nil, fmt.Errorf("reading %s/%d@%d: %w", topic, p, offset, err)
			}
			if resp.Error != nil {
				return nil, fmt.Errorf("reading %s/%d@%d: %w", topic, p, offset, resp.Error)
			}
			if offset >= resp.HighWatermark {
				break
			}
			for {
				r, err := resp.Records.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("reading %s/%d@%d: %w", topic, p, offset, err)
				}
				if r.Offset < offset {
					continue
				}
				m := kafka.Message{Topic: topic, Partition: p, Offset: r.Offset, Time: r.Time, Headers: append([]kafka.Header(nil), r.Headers...)}
				if m.Key, err = readBytes(r.Key); err == nil {
					m.Value, err = readBytes(r.Value)
				}
				if err != nil {
					return nil, fmt.Errorf("reading %s/%d@%d: %w", topic, p, r.Offset, err)
				}
				out = append(out, m)
				offset = r.Offset + 1
			}
		}
	}
	return out, nil
}

func readBytes(b interface {
	io.Reader
	Len() int
}) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	return io.ReadAll(b)
}

// lag returns how many records of the topics' partitions the group has not
// committed yet.
func lag(ctx context.Context, c *kafka.Client, group string, partitions map[string]int) (int64, error) {
	req := &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{}}
	list := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for topic, n := range partitions {
		for p := range n {
			req.Topics[topic] = append(req.Topics[topic], p)
			list.Topics[topic] = append(list.Topics[topic], kafka.LastOffsetOf(p))
		}
	}
	committed, err := c.OffsetFetch(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("reading the offsets of group %s: %w", group, err)
	}
	if committed.Error != nil {
		return 0, fmt.Errorf("reading the offsets of group %s: %w", group, committed.Error)
	}
	ends, err := c.ListOffsets(ctx, list)
	if err != nil {
		return 0, fmt.Errorf("listing offsets: %w", err)
	}
	at := map[orderstatus.Place]int64{}
	for topic, ps := range committed.Topics {
		for _, p := range ps {
			at[orderstatus.Place{Topic: topic, Partition: p.Partition}] = max(p.CommittedOffset, 0)
		}
	}
	var total int64
	for topic, ps := range ends.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return 0, fmt.Errorf("listing offsets of %s/%d: %w", topic, p.Partition, p.Error)
			}
			total += max(p.LastOffset-at[orderstatus.Place{Topic: topic, Partition: p.Partition}], 0)
		}
	}
	return total, nil
}

// Accounting says what became of every record the demo produced, as read
// back from the topics and the projection.
type Accounting struct {
	// Produced counts the original records: every record of the events
	// topic, and every record of the retry topic that the processor did not
	// write (its retry headers do not parse).
	Produced int
	// Projected counts originals whose event is in the projection.
	Projected int
	// DeadLettered counts originals with a dead letter pointing at them.
	DeadLettered int
	// Lost counts originals with neither: Produced - Projected - DeadLettered.
	Lost int
	// Both counts originals both projected and dead-lettered (a bug if not 0).
	Both int
	// RetryRecords counts the records the processor wrote to the retry topic.
	RetryRecords int
	// DeadLetters are the records of the dead-letter topic.
	DeadLetters []kafka.Message
	// LostPlaces lists where the lost records are.
	LostPlaces []orderstatus.Place
}

// account reads the three topics and the store and accounts for every record.
func account(ctx context.Context, c *kafka.Client, s orderstatus.Settings, parts map[string]int, store orderstatus.Store) (Accounting, error) {
	var a Accounting
	events, err := readTopic(ctx, c, s.EventsTopic, parts[s.EventsTopic])
	if err != nil {
		return a, err
	}
	retries, err := readTopic(ctx, c, s.RetryTopic, parts[s.RetryTopic])
	if err != nil {
		return a, err
	}
	if a.DeadLetters, err = readTopic(ctx, c, s.DeadLetterTopic, parts[s.DeadLetterTopic]); err != nil {
		return a, err
	}
	dead := map[orderstatus.Place]bool{}
	for _, m := range a.DeadLetters {
		topic, _ := orderstatus.Header(m.Headers, orderstatus.DLQHeaderTopic)
		partition, _ := orderstatus.Header(m.Headers, orderstatus.DLQHeaderPartition)
		offset, _ := orderstatus.Header(m.Headers, orderstatus.DLQHeaderOffset)
		p, err1 := strconv.Atoi(partition)
		o, err2 := strconv.ParseInt(offset, 10, 64)
		if err1 != nil || err2 != nil {
			return a, fmt.Errorf("dead letter %s/%d@%d has no readable origin", m.Topic, m.Partition, m.Offset)
		}
		dead[orderstatus.Place{Topic: topic, Partition: p, Offset: o}] = true
	}
	tally := func(m kafka.Message, projected bool) {
		a.Produced++
		place := orderstatus.Place{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}
		switch {
		case dead[place] && projected:
			a.Both++
			a.DeadLettered++
		case dead[place]:
			a.DeadLettered++
		case projected:
			a.Projected++
		default:
			a.Lost++
			a.LostPlaces = append(a.LostPlaces, place)
		}
	}
	for _, m := range events {
		projected := false
		if e, _, err := orderstatus.DecodeEvent(m.Value); err == nil {
			if projected, err = store.HasEvent(ctx, e.ID); err != nil {
				return a, err
			}
		}
		tally(m, projected)
	}
	for _, m := range retries {
		if _, _, err := s.Origin(m); err == nil {
			a.RetryRecords++
			continue
		}
		tally(m, false)
	}
	return a, nil
}
