package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	bqkafka "github.com/babelqueue/babelqueue-go/kafka"
	kafkago "github.com/segmentio/kafka-go"
)

// Headers bq adds to a redriven Kafka record.
const (
	// headerRedriveCount counts how many times a message was redriven; the
	// replay-count guard reads it.
	headerRedriveCount = "bq-redrive-count"
	// headerRedriveSource names the dead letter a record was redriven
	// from, "<dlq topic>/<partition>/<offset>": a resumed run looks for it
	// to recognise a copy written just before a crash.
	headerRedriveSource = "bq-redrive-source"
)

// pendingWrite is the commit metadata a Kafka redrive stores, with the
// offset of the record it is about to write, before writing it: the copy,
// if the write happened, is at or after From on Target/Partition.
type pendingWrite struct {
	V         int    `json:"bq_redrive"`
	DLQOffset int64  `json:"dlq_offset"`
	Target    string `json:"target"`
	Partition int    `json:"partition"`
	From      int64  `json:"from"`
}

func (p pendingWrite) encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

func decodePending(s string) (pendingWrite, bool) {
	var p pendingWrite
	if s == "" || json.Unmarshal([]byte(s), &p) != nil || p.V != 1 {
		return p, false
	}
	return p, true
}

// redriveSource is the bq-redrive-source value of a DLQ record.
func redriveSource(topic string, partition int, offset int64) string {
	return topic + "/" + strconv.Itoa(partition) + "/" + strconv.FormatInt(offset, 10)
}

// redrivenHeaders are the headers of the redriven copy of r: every
// header kept except the retry-tier ones, bq-attempts reset to 0,
// bq-redrive-count incremented, bq-redrive-source set and, with bypass,
// bq-replay-bypass=true.
func redrivenHeaders(r *record, count int, bypass bool) []kafkago.Header {
	var hs []kafkago.Header
	for _, h := range r.Headers {
		switch h.Key {
		case babelqueue.HeaderAttempts, babelqueue.HeaderDelay, babelqueue.HeaderOriginalTopic,
			headerRedriveCount, headerRedriveSource, babelqueue.HeaderReplayBypass:
			continue
		}
		hs = append(hs, kafkago.Header{Key: h.Key, Value: []byte(h.Value)})
	}
	hs = append(hs,
		kafkago.Header{Key: babelqueue.HeaderAttempts, Value: []byte("0")},
		kafkago.Header{Key: headerRedriveCount, Value: []byte(strconv.Itoa(count))},
		kafkago.Header{Key: headerRedriveSource, Value: []byte(redriveSource(r.Topic, r.Partition, r.Offset))},
	)
	if bypass {
		hs = append(hs, kafkago.Header{Key: babelqueue.HeaderReplayBypass, Value: []byte("true")})
	}
	return hs
}

// redriveCount reads the bq-redrive-count header (0 when absent or bad).
func redriveCount(r *record) int {
	v, ok := r.header(headerRedriveCount)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// kafkaRedriver runs a Kafka redrive. Progress lives in consumer group
// offsets of the DLQ, committed by this process without joining the group
// (generation -1): the committed offset of a partition is the next record
// to examine. See the redrive help for the guarantees.
type kafkaRedriver struct {
	k       *kafkaConn
	dlq     string
	group   string
	opts    redriveOptions
	report  *redriveReport
	partsOf map[string]int
	ends    map[targetPartition]int64
	tick    func()
}

// commit stores the offset of partition p with metadata.
func (d *kafkaRedriver) commit(ctx context.Context, p int, offset int64, metadata string) error {
	res, err := d.k.client.OffsetCommit(ctx, &kafkago.OffsetCommitRequest{
		GroupID:      d.group,
		GenerationID: -1,
		Topics:       map[string][]kafkago.OffsetCommit{d.dlq: {{Partition: p, Offset: offset, Metadata: metadata}}},
	})
	if err != nil {
		return fmt.Errorf("commit %s/%d@%d for group %q: %w", d.dlq, p, offset, d.group, err)
	}
	for _, pr := range res.Topics[d.dlq] {
		if pr.Error != nil {
			return fmt.Errorf("commit %s/%d@%d for group %q: %w", d.dlq, p, offset, d.group, pr.Error)
		}
	}
	return nil
}

// committed reads the group's offsets and metadata of the DLQ partitions
// (offset -1 when none was committed).
func (d *kafkaRedriver) committed(ctx context.Context, parts []int) (map[int]kafkago.OffsetFetchPartition, error) {
	res, err := d.k.client.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: d.group, Topics: map[string][]int{d.dlq: parts}})
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %q: %w", d.group, err)
	}
	if res.Error != nil {
		return nil, fmt.Errorf("fetch offsets of group %q: %w", d.group, res.Error)
	}
	out := map[int]kafkago.OffsetFetchPartition{}
	for _, p := range res.Topics[d.dlq] {
		if p.Error != nil {
			return nil, fmt.Errorf("fetch offset of %s/%d for group %q: %w", d.dlq, p.Partition, d.group, p.Error)
		}
		out[p.Partition] = p
	}
	return out, nil
}

// targetPartitions caches the partition count of target topics.
func (d *kafkaRedriver) targetPartitions(ctx context.Context, topic string) (int, error) {
	if n, ok := d.partsOf[topic]; ok {
		return n, nil
	}
	parts, err := d.k.partitions(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("redrive target: %w", err)
	}
	d.partsOf[topic] = len(parts)
	return len(parts), nil
}

// alreadyWritten looks for the copy of the DLQ record at pw.DLQOffset on
// the target partition, from pw.From to its current end.
func (d *kafkaRedriver) alreadyWritten(ctx context.Context, p int, pw pendingWrite) (bool, error) {
	_, next, err := d.k.bounds(ctx, pw.Target, []int{pw.Partition})
	if err != nil {
		return false, err
	}
	want := redriveSource(d.dlq, p, pw.DLQOffset)
	found := false
	err = d.k.readRange(ctx, pw.Target, pw.Partition, pw.From, next[pw.Partition], func(m kafkago.Message) error {
		for _, h := range m.Headers {
			if h.Key == headerRedriveSource && string(h.Value) == want {
				found = true
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, err
	}
	return found, nil
}

// run redrives every DLQ partition up to the high-water mark read at the
// start.
func (d *kafkaRedriver) run(ctx context.Context) error {
	parts, err := d.k.partitions(ctx, d.dlq)
	if err != nil {
		return err
	}
	first, next, err := d.k.bounds(ctx, d.dlq, parts)
	if err != nil {
		return err
	}
	committed, err := d.committed(ctx, parts)
	if err != nil {
		return err
	}
	start := map[int]int64{}
	for _, p := range parts {
		s := first[p]
		if c, ok := committed[p]; ok && c.CommittedOffset >= 0 {
			s = max(c.CommittedOffset, first[p])
		}
		start[p] = s
		if next[p] > s {
			d.report.Pending += int(next[p] - s)
		}
	}
	d.report.Resumed = false
	for _, p := range parts {
		if start[p] > first[p] {
			d.report.Resumed = true
		}
	}
	if d.opts.onTotal != nil {
		d.opts.onTotal(d.report.Pending)
	}
	for _, p := range parts {
		if d.opts.max > 0 && d.report.Moved >= d.opts.max {
			break
		}
		var recovered *pendingWrite
		if c, ok := committed[p]; ok && !d.opts.dryRun {
			if pw, ok := decodePending(c.Metadata); ok && pw.DLQOffset == start[p] {
				found, err := d.alreadyWritten(ctx, p, pw)
				if err != nil {
					return fmt.Errorf("check for a copy written before an interrupted run: %w", err)
				}
				if found {
					recovered = &pw
				}
			}
		}
		if err := d.runPartition(ctx, p, start[p], next[p], recovered); err != nil {
			return err
		}
	}
	return nil
}

// errMaxReached stops a partition read once --max records were moved.
var errMaxReached = errors.New("max reached")

func (d *kafkaRedriver) runPartition(ctx context.Context, p int, from, to int64, recovered *pendingWrite) error {
	pos := from // next offset to examine; committed up to here
	dirty := false
	flush := func() error {
		if !dirty || d.opts.dryRun {
			return nil
		}
		dirty = false
		return d.commit(ctx, p, pos, "")
	}
	err := d.k.readRange(ctx, d.dlq, p, from, to, func(m kafkago.Message) error {
		if d.opts.max > 0 && d.report.Moved >= d.opts.max {
			return errMaxReached
		}
		r := kafkaRecord(m)
		item := d.examine(r)
		if recovered != nil && r.Offset == recovered.DLQOffset && item.Outcome == outcomeMoved {
			item.Outcome = outcomeRecovered
			item.Target = recovered.Target
		}
		switch item.Outcome {
		case outcomeMoved:
			if !d.opts.dryRun {
				if err := flush(); err != nil {
					return err
				}
				if err := d.write(ctx, r, item); err != nil {
					return err
				}
			}
			pos = r.Offset + 1
			if !d.opts.dryRun {
				if err := d.commit(ctx, p, pos, ""); err != nil {
					return err
				}
			}
		default:
			pos = r.Offset + 1
			dirty = true
			if item.Outcome == outcomeRecovered || (pos-from)%500 == 0 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		d.report.add(item)
		if d.tick != nil {
			d.tick()
		}
		return nil
	})
	if err != nil && !errors.Is(err, errMaxReached) {
		if ferr := flush(); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return err
	}
	return flush()
}

// examine decides what happens to one dead letter.
func (d *kafkaRedriver) examine(r *record) redriveItem {
	item := redriveItem{Partition: r.Partition, Offset: r.Offset}
	env, err := babelqueue.Decode(r.Value)
	if err != nil {
		item.Outcome, item.Note = outcomeUndecodable, err.Error()
		return item
	}
	item.ID, item.URN = env.Meta.ID, env.URN()
	dl, _ := babelqueue.DeadLetterOf(r.Value)
	if dl != nil {
		item.Reason = dl.Reason
	}
	if !d.opts.selector.match(item.URN, dl, failedAt(dl, r.Time)) {
		item.Outcome = outcomeUnselected
		return item
	}
	item.Count = redriveCount(r)
	if d.opts.maxRedrives > 0 && item.Count >= d.opts.maxRedrives {
		item.Outcome = outcomeGuarded
		item.Note = fmt.Sprintf("already redriven %d times (--max-redrives %d)", item.Count, d.opts.maxRedrives)
		return item
	}
	switch {
	case d.opts.target != "":
		item.Target = d.opts.target
	case dl != nil && dl.OriginalQueue != "":
		item.Target = dl.OriginalQueue
	default:
		item.Target = env.Meta.Queue
	}
	if item.Target == "" {
		item.Outcome, item.Note = outcomeNoTarget, "no dead_letter.original_queue or meta.queue; use --target"
		return item
	}
	item.Outcome = outcomeMoved
	return item
}

// write republishes r to its target after recording, in the commit
// metadata, where the copy will land; it returns after the broker
// acknowledged the write (acks=all).
func (d *kafkaRedriver) write(ctx context.Context, r *record, item redriveItem) error {
	body, err := babelqueue.ClearDeadLetter(r.Value)
	if err != nil {
		return fmt.Errorf("clear dead_letter of %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	n, err := d.targetPartitions(ctx, item.Target)
	if err != nil {
		return err
	}
	tp := r.Partition % n
	if len(r.Key) > 0 {
		tp = bqkafka.PartitionForKey(r.Key, n)
	}
	from, err := d.lowerBound(ctx, item.Target, tp)
	if err != nil {
		return err
	}
	pw := pendingWrite{V: 1, DLQOffset: r.Offset, Target: item.Target, Partition: tp, From: from}
	if err := d.commit(ctx, r.Partition, r.Offset, pw.encode()); err != nil {
		return err
	}
	rec := kafkago.Record{Time: r.Time, Value: kafkago.NewBytes(body), Headers: redrivenHeaders(r, item.Count+1, d.opts.bypass)}
	if len(r.Key) > 0 {
		rec.Key = kafkago.NewBytes(r.Key)
	}
	res, err := d.k.client.Produce(ctx, &kafkago.ProduceRequest{
		Topic:        item.Target,
		Partition:    tp,
		RequiredAcks: kafkago.RequireAll,
		Records:      kafkago.NewRecordReader(rec),
	})
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		return fmt.Errorf("republish %s/%d@%d to %s/%d: %w", r.Topic, r.Partition, r.Offset, item.Target, tp, err)
	}
	if res.BaseOffset >= from {
		d.ends[targetPartition{item.Target, tp}] = res.BaseOffset + 1
	}
	return nil
}

// targetPartition names a partition of a redrive target.
type targetPartition struct {
	topic     string
	partition int
}

// lowerBound returns an offset at or before which nothing bq writes next
// to topic/partition can land: the end offset read once, then the offset
// after bq's own last write there (other producers only push the copy
// further). It saves a ListOffsets round trip per record.
func (d *kafkaRedriver) lowerBound(ctx context.Context, topic string, partition int) (int64, error) {
	key := targetPartition{topic, partition}
	if v, ok := d.ends[key]; ok {
		return v, nil
	}
	_, next, err := d.k.bounds(ctx, topic, []int{partition})
	if err != nil {
		return 0, err
	}
	d.ends[key] = next[partition]
	return next[partition], nil
}
