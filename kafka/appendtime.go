package kafka

import (
	"context"
	"log/slog"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// batchLog holds the batch headers of one partition whose records were not
// looked up yet, at most maxBatchLog of them. A fetched record finds its
// batch's timestamp type and maxTimestamp there.
type batchLog struct {
	topic     string
	partition int32

	mu      sync.Mutex
	batches []batchHeader // ascending offsets
}

// maxBatchLog bounds a batchLog. A reader is ahead of its records by its
// queue and at most one fetch (MaxBytes 1 MiB, batches of 61 bytes or more).
const maxBatchLog = 1 << 15

func newBatchLog(topic string, partition int) *batchLog {
	return &batchLog{topic: topic, partition: int32(partition)}
}

// add records h when it is of the log's partition. A batch fetched again (a
// reader that reconnected or fetched from an earlier offset) replaces what
// the log held from its base offset on.
func (l *batchLog) add(h batchHeader) {
	if h.Topic != l.topic || h.Partition != l.partition {
		return
	}
	h.Topic = "" // the log's own; not kept per batch
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.batches)
	for i > 0 && l.batches[i-1].LastOffset >= h.BaseOffset {
		i--
	}
	l.batches = append(l.batches[:i], h)
	if len(l.batches) > maxBatchLog {
		// Out of step with its reader: forget the oldest quarter.
		n := copy(l.batches, l.batches[maxBatchLog/4:])
		l.batches = l.batches[:n]
	}
}

// lookup returns the header of the batch holding offset and forgets the
// batches before it: records are looked up in offset order.
func (l *batchLog) lookup(offset int64) (batchHeader, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for i < len(l.batches) && l.batches[i].LastOffset < offset {
		i++
	}
	if i > 0 {
		n := copy(l.batches, l.batches[i:])
		l.batches = l.batches[:n]
	}
	if len(l.batches) == 0 || l.batches[0].BaseOffset > offset {
		return batchHeader{}, false
	}
	return l.batches[0], true
}

// appendTimeReader is a partition reader whose records carry their batch's
// LogAppendTime as their Time. kafka-go gives every record baseTimestamp +
// its delta, the producer's clock, whatever the batch's timestamp type; on
// a LogAppendTime batch the broker's append time is its maxTimestamp, and
// this reader puts it back. A CreateTime record keeps kafka-go's Time.
type appendTimeReader struct {
	partitionReader
	batches *batchLog
	log     *slog.Logger
	unread  bool // a record's batch header was missing; logged once
}

// FetchMessage returns the next record, stamped with its batch's append
// time when the batch is a LogAppendTime one.
func (r *appendTimeReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	m, err := r.partitionReader.FetchMessage(ctx)
	if err != nil {
		return m, err
	}
	h, ok := r.batches.lookup(m.Offset)
	switch {
	case !ok:
		if !r.unread {
			r.unread = true
			r.log.Warn("kafka: re-injector did not see the record's batch header; its wait starts at the record's own timestamp",
				"topic", m.Topic, "partition", m.Partition, "offset", m.Offset)
		}
	case h.LogAppendTime:
		m.Time = time.UnixMilli(h.MaxTimestamp)
	}
	return m, nil
}

// openReinjectPartition opens a reader of one retry partition whose records
// carry the broker's append time on a LogAppendTime topic. Its fetches wait
// for minBytes or maxWait; its connections are fetchTaps that read the
// batch headers of the reader's own fetches.
func (g *kafkaGeneration) openReinjectPartition(topic string, partition int, offset int64, buffer, minBytes int, maxWait time.Duration) partitionReader {
	batches, keys := newBatchLog(topic, partition), newEmptyKeys(topic, partition)
	r := g.openPartitionWith(tappedDialer(g.t.dialer, batches.add, keys.add), topic, partition, offset, buffer, minBytes, maxWait)
	return &appendTimeReader{partitionReader: &keyReader{partitionReader: r, keys: keys}, batches: batches, log: g.t.cfg.log()}
}

// batchLogs holds a batchLog per partition of some topics, made as their
// headers arrive. The backlog sampler's fetches, over connections shared by
// every partition, report to it.
type batchLogs struct {
	topics map[string]bool
	mu     sync.Mutex
	logs   map[topicPartition]*batchLog
}

func newBatchLogs(topics []string) *batchLogs {
	l := &batchLogs{topics: make(map[string]bool, len(topics)), logs: make(map[topicPartition]*batchLog)}
	for _, t := range topics {
		l.topics[t] = true
	}
	return l
}

// add records h in its partition's log when its topic is one of l's.
func (l *batchLogs) add(h batchHeader) {
	if l.topics[h.Topic] {
		l.of(h.Topic, int(h.Partition)).add(h)
	}
}

// of returns the log of topic/partition.
func (l *batchLogs) of(topic string, partition int) *batchLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := topicPartition{topic: topic, partition: partition}
	log := l.logs[k]
	if log == nil {
		log = newBatchLog(topic, partition)
		l.logs[k] = log
	}
	return log
}

// recordTime is the timestamp of the record at offset of topic/partition
// whose own timestamp is own: its batch's append time when the batch is a
// LogAppendTime one l has seen the header of, else own.
func (l *batchLogs) recordTime(topic string, partition int, offset int64, own time.Time) time.Time {
	if h, ok := l.of(topic, partition).lookup(offset); ok && h.LogAppendTime {
		return time.UnixMilli(h.MaxTimestamp)
	}
	return own
}
