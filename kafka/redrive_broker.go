package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// This file holds the broker calls of a redrive: partition metadata,
// offsets, the cursor (a consumer group committed without joining it),
// range reads and single-record writes acknowledged by every in-sync
// replica.

// Limits of the redrive reads.
const (
	// redriveFetchBytes bounds one fetch of a redrive read.
	redriveFetchBytes = 4 << 20
	// redriveFetchWait is the broker-side wait of one fetch.
	redriveFetchWait = 500 * time.Millisecond
	// redriveEmptyFetches is how many fetches in a row may return nothing
	// before the end of a range before the read gives up on that range.
	redriveEmptyFetches = 3
	// redriveFlushTimeout bounds the commit a cancelled run still makes of
	// the progress it has already written.
	redriveFlushTimeout = 10 * time.Second
)

// redriveRecord is one record of a redrive read, its bytes copied out of
// the fetch buffer.
type redriveRecord struct {
	Partition int
	Offset    int64
	Time      time.Time
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value
	Headers   []kafkago.Header
}

// redriveBroker makes the broker calls of one redrive run, through a
// client with its own connections (and metadata cache), built from the
// transport's brokers, TLS and SASL.
type redriveBroker struct {
	net    *kafkago.Transport
	client *kafkago.Client
}

func newRedriveBroker(cfg *config) *redriveBroker { return newRedriveBrokerOn(cfg, netTransport(cfg)) }

// newRedriveBrokerOn is newRedriveBroker on the connections of net.
func newRedriveBrokerOn(cfg *config, net *kafkago.Transport) *redriveBroker {
	return &redriveBroker{net: net, client: &kafkago.Client{Addr: kafkago.TCP(cfg.brokers...), Transport: net, Timeout: 30 * time.Second}}
}

func (b *redriveBroker) close() { b.net.CloseIdleConnections() }

// partitions returns the sorted partition ids of topic; a missing topic is
// an error.
func (b *redriveBroker) partitions(ctx context.Context, topic string) ([]int, error) {
	md, err := b.client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, wrapf(err, "metadata of %q", topic)
	}
	for _, t := range md.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, wrapf(t.Error, "topic %q", topic)
		}
		ids := make([]int, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			ids = append(ids, p.ID)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("kafka: topic %q has no partitions", topic)
		}
		sort.Ints(ids)
		return ids, nil
	}
	return nil, wrapf(kafkago.UnknownTopicOrPartition, "topic %q", topic)
}

// bounds returns the first and the next (high-water) offset of each
// partition of topic. Transient errors are retried.
func (b *redriveBroker) bounds(ctx context.Context, topic string, parts []int) (first, next map[int]int64, err error) {
	err = retrying(ctx, transient, func() error {
		var err error
		first, next, err = b.boundsOnce(ctx, topic, parts)
		return err
	})
	return first, next, err
}

func (b *redriveBroker) boundsOnce(ctx context.Context, topic string, parts []int) (first, next map[int]int64, err error) {
	reqs := make([]kafkago.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafkago.FirstOffsetOf(p), kafkago.LastOffsetOf(p))
	}
	res, err := b.client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, nil, wrapf(err, "list offsets of %q", topic)
	}
	first, next = make(map[int]int64, len(parts)), make(map[int]int64, len(parts))
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, nil, wrapf(po.Error, "list offsets of %s/%d", topic, po.Partition)
		}
		first[po.Partition], next[po.Partition] = po.FirstOffset, po.LastOffset
	}
	for _, p := range parts {
		if _, ok := next[p]; !ok {
			return nil, nil, fmt.Errorf("kafka: list offsets of %q: partition %d missing from the answer", topic, p)
		}
	}
	return first, next, nil
}

// committed reads the cursor of topic's partitions: the offset and
// metadata the group committed for each (offset -1 when none).
func (b *redriveBroker) committed(ctx context.Context, group, topic string, parts []int) (map[int]kafkago.OffsetFetchPartition, error) {
	res, err := FetchOffsets(ctx, b.client, &kafkago.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	out := make(map[int]kafkago.OffsetFetchPartition, len(parts))
	if errors.Is(err, kafkago.GroupIdNotFound) {
		return out, nil // a group that never committed: no offsets
	}
	if err != nil {
		return nil, wrapf(err, "read the offsets of group %q", group)
	}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			return nil, wrapf(p.Error, "read the offset of %s/%d for group %q", topic, p.Partition, group)
		}
		out[p.Partition] = p
	}
	return out, nil
}

// rejectedBeforeAppend reports a produce error by which the broker says it
// did not append the record (it is not the leader, or knows no leader or
// no such partition yet): a retry cannot write it twice. An ambiguous
// failure (a timeout, a lost connection) is not retried; the cursor
// metadata lets the next run find out.
func rejectedBeforeAppend(err error) bool {
	return errors.Is(err, kafkago.NotLeaderForPartition) || errors.Is(err, kafkago.LeaderNotAvailable) ||
		errors.Is(err, kafkago.UnknownTopicOrPartition)
}

// commit stores offset and metadata for topic/partition in group, without
// joining the group (generation -1): the broker refuses it while the group
// has live members. Transient errors are retried.
func (b *redriveBroker) commit(ctx context.Context, group, topic string, partition int, offset int64, metadata string) error {
	return retrying(ctx, transient, func() error { return b.commitOnce(ctx, group, topic, partition, offset, metadata) })
}

func (b *redriveBroker) commitOnce(ctx context.Context, group, topic string, partition int, offset int64, metadata string) error {
	res, err := b.client.OffsetCommit(ctx, &kafkago.OffsetCommitRequest{
		GroupID:      group,
		GenerationID: -1,
		Topics:       map[string][]kafkago.OffsetCommit{topic: {{Partition: partition, Offset: offset, Metadata: metadata}}},
	})
	if err == nil {
		for _, pr := range res.Topics[topic] {
			if pr.Error != nil {
				err = pr.Error
				break
			}
		}
	}
	if err != nil {
		return wrapf(err, "commit %s/%d@%d for group %q", topic, partition, offset, group)
	}
	return nil
}

// produce writes recs to topic/partition as one record batch, which the
// broker appends whole or not at all, and returns the offset of the first
// once every in-sync replica has them (acks=all). A write the broker
// rejected before appending it is retried.
func (b *redriveBroker) produce(ctx context.Context, topic string, partition int, recs ...redriveRecord) (int64, error) {
	var off int64
	err := retrying(ctx, rejectedBeforeAppend, func() error {
		var err error
		off, err = b.produceOnce(ctx, topic, partition, recs)
		return err
	})
	return off, err
}

func (b *redriveBroker) produceOnce(ctx context.Context, topic string, partition int, recs []redriveRecord) (int64, error) {
	rs := make([]kafkago.Record, len(recs))
	for i, rec := range recs {
		rs[i] = kafkago.Record{Time: rec.Time, Key: kafkago.NewBytes(rec.Key), Value: kafkago.NewBytes(rec.Value), Headers: rec.Headers}
	}
	res, err := b.client.Produce(ctx, &kafkago.ProduceRequest{
		Topic:        topic,
		Partition:    partition,
		RequiredAcks: kafkago.RequireAll,
		Records:      kafkago.NewRecordReader(rs...),
	})
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err == nil {
		for _, e := range res.RecordErrors {
			if e != nil {
				err = e
				break
			}
		}
	}
	if err != nil {
		return 0, writeError(topic+"/"+strconv.Itoa(partition), err)
	}
	return res.BaseOffset, nil
}

// errStopRead ends a read early without an error.
var errStopRead = errors.New("kafka: stop reading")

// read calls fn for each record of topic/partition with from <= offset <
// to, in offset order. It returns fn's error (errStopRead ends the read
// with nil). A range whose tail cannot be read (control records,
// compacted away) ends the read where it stalls; the records after it are
// not visited.
func (b *redriveBroker) read(ctx context.Context, topic string, partition int, from, to int64, fn func(redriveRecord) error) error {
	pos := from
	empty := 0
	for pos < to {
		recs, err := b.fetch(ctx, topic, partition, pos)
		if err != nil {
			return err
		}
		progressed := false
		for _, r := range recs {
			if r.Offset < pos {
				continue // a batch may start before the offset asked for
			}
			if r.Offset >= to {
				return nil
			}
			progressed = true
			pos = r.Offset + 1
			if err := fn(r); err != nil {
				if errors.Is(err, errStopRead) {
					return nil
				}
				return err
			}
		}
		if !progressed {
			if empty++; empty >= redriveEmptyFetches {
				return nil
			}
			continue
		}
		empty = 0
	}
	return nil
}

// fetch reads the records of topic/partition from offset on, at most
// redriveFetchBytes of them. Transient errors are retried.
func (b *redriveBroker) fetch(ctx context.Context, topic string, partition int, offset int64) ([]redriveRecord, error) {
	var recs []redriveRecord
	err := retrying(ctx, transient, func() error {
		var err error
		recs, err = b.fetchOnce(ctx, topic, partition, offset)
		return err
	})
	return recs, err
}

func (b *redriveBroker) fetchOnce(ctx context.Context, topic string, partition int, offset int64) ([]redriveRecord, error) {
	res, err := b.client.Fetch(ctx, &kafkago.FetchRequest{
		Topic:     topic,
		Partition: partition,
		Offset:    offset,
		MinBytes:  1,
		MaxBytes:  redriveFetchBytes,
		MaxWait:   redriveFetchWait,
	})
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		return nil, wrapf(err, "read %s/%d at %d", topic, partition, offset)
	}
	var out []redriveRecord
	for {
		r, err := res.Records.ReadRecord()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, wrapf(err, "read %s/%d at %d", topic, partition, offset)
		}
		rec := redriveRecord{Partition: partition, Offset: r.Offset, Time: r.Time, Headers: make([]kafkago.Header, len(r.Headers))}
		for i, h := range r.Headers {
			rec.Headers[i] = kafkago.Header{Key: h.Key, Value: append([]byte(nil), h.Value...)}
		}
		if rec.Key, err = readBytes(r.Key); err == nil {
			rec.Value, err = readBytes(r.Value)
		}
		if err != nil {
			return nil, wrapf(err, "read %s/%d@%d", topic, partition, r.Offset)
		}
		out = append(out, rec)
	}
}

// readBytes copies b out and closes it; a nil b (a null key or value)
// gives nil, an empty one a non-nil empty slice.
func readBytes(b kafkago.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	defer b.Close()
	out, err := kafkago.ReadAll(b)
	if out == nil && err == nil {
		out = []byte{}
	}
	return out, err
}

// redrivePending is the cursor metadata a redrive commits, at the offset
// of a dead letter, before it writes the copies of the DLQ records Offset
// to Last (one record batch): the copies, if the write happened, are on
// Topic/Partition at or after From.
type redrivePending struct {
	V         int    `json:"bq_redrive"`
	Offset    int64  `json:"offset"`
	Last      int64  `json:"last"`
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	From      int64  `json:"from"`
}

const redrivePendingVersion = 1

func (p redrivePending) encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// decodeRedrivePending reads cursor metadata; false when it records no
// pending write.
func decodeRedrivePending(s string) (redrivePending, bool) {
	var p redrivePending
	if s == "" || json.Unmarshal([]byte(s), &p) != nil || p.V != redrivePendingVersion || p.Topic == "" || p.Offset < 0 || p.From < 0 {
		return redrivePending{}, false
	}
	p.Last = max(p.Last, p.Offset)
	return p, true
}
