package appdemo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	kafkago "github.com/segmentio/kafka-go"
)

// readTopic returns every record of topic, partition by partition in
// offset order, from the first offset to the end offset at the time of
// the call.
func readTopic(ctx context.Context, brokers []string, topic string) ([]kafkago.Message, error) {
	client := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 10 * time.Second}
	md, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	var parts []int
	for _, t := range md.Topics {
		if t.Name == topic {
			if t.Error != nil {
				return nil, fmt.Errorf("metadata of %s: %w", topic, t.Error)
			}
			for _, p := range t.Partitions {
				parts = append(parts, p.ID)
			}
		}
	}
	sort.Ints(parts)
	reqs := make([]kafkago.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafkago.FirstOffsetOf(p), kafkago.LastOffsetOf(p))
	}
	offs, err := client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	var out []kafkago.Message
	for _, po := range offs.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("offsets of %s/%d: %w", topic, po.Partition, po.Error)
		}
		if po.LastOffset <= po.FirstOffset {
			continue
		}
		msgs, err := readPartition(ctx, brokers, topic, po.Partition, po.FirstOffset, po.LastOffset)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

func readPartition(ctx context.Context, brokers []string, topic string, partition int, from, to int64) ([]kafkago.Message, error) {
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: topic, Partition: partition,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return nil, err
	}
	var out []kafkago.Message
	for next := from; next < to; {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s/%d at %d: %w", topic, partition, next, err)
		}
		out = append(out, m)
		next = m.Offset + 1
	}
	return out, nil
}

// Accounting is what became of every message, read back from the topics.
type Accounting struct {
	// Produced counts the messages published (distinct meta.id in the
	// work topic).
	Produced int
	// Handled counts those whose handler succeeded (in the results topic).
	Handled int
	// DeadLettered counts those written to the DLQ, Redriven those of them
	// a redrive moved back to the work topic, InDLQ those still waiting
	// in the DLQ.
	DeadLettered, Redriven, InDLQ int
	// Lost counts produced messages neither handled nor waiting in the
	// DLQ; Lost names them.
	Lost      int
	LostIDs   []string
	DeadSeen  map[string]*babelqueue.Envelope // the latest dead letter of each message, by meta.id
	handledID map[string]bool
}

// Line is the demo's last line.
func (a *Accounting) Line() string {
	return fmt.Sprintf("accounted: produced=%d handled=%d dead_lettered=%d redriven=%d in_dlq=%d lost=%d",
		a.Produced, a.Handled, a.DeadLettered, a.Redriven, a.InDLQ, a.Lost)
}

// topicsOf names the demo's topics.
type topicsOf struct{ work, dlq, results string }

// account reads the work topic, the DLQ and the results topic back. A
// message is redriven when its work topic holds a second first-attempt
// copy (attempts 0), which only a redrive writes.
func account(ctx context.Context, brokers []string, t topicsOf) (*Accounting, error) {
	work, err := readTopic(ctx, brokers, t.work)
	if err != nil {
		return nil, err
	}
	dlq, err := readTopic(ctx, brokers, t.dlq)
	if err != nil {
		return nil, err
	}
	results, err := readTopic(ctx, brokers, t.results)
	if err != nil {
		return nil, err
	}
	a := &Accounting{DeadSeen: map[string]*babelqueue.Envelope{}, handledID: map[string]bool{}}
	firsts := map[string]int{}
	var ids []string
	for _, m := range work {
		env, err := babelqueue.Decode(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s/%d@%d: %w", t.work, m.Partition, m.Offset, err)
		}
		if env.Attempts == 0 {
			if firsts[env.Meta.ID] == 0 {
				ids = append(ids, env.Meta.ID)
			}
			firsts[env.Meta.ID]++
		}
	}
	a.Produced = len(ids)
	for _, m := range results {
		a.handledID[string(m.Value)] = true
	}
	a.Handled = len(a.handledID)
	for _, m := range dlq {
		env, err := babelqueue.Decode(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s/%d@%d: %w", t.dlq, m.Partition, m.Offset, err)
		}
		a.DeadSeen[env.Meta.ID] = env
	}
	a.DeadLettered = len(a.DeadSeen)
	for id := range a.DeadSeen {
		if firsts[id] > 1 {
			a.Redriven++
		} else {
			a.InDLQ++
		}
	}
	for _, id := range ids {
		if !a.handledID[id] && (a.DeadSeen[id] == nil || firsts[id] > 1) {
			a.LostIDs = append(a.LostIDs, id)
		}
	}
	a.Lost = len(a.LostIDs)
	return a, nil
}

// errLost is returned by Run when a message is unaccounted for.
var errLost = errors.New("messages lost")
