package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

var (
	_ driver.BatchSender   = (*Transport)(nil)
	_ driver.BatchReleaser = (*Transport)(nil)
)

// ReleasesBatch reports whether a SendBatch that returned nil leaves
// nothing of its Outgoings referenced (driver.BatchReleaser). It is true
// with the transport's own kafka-go Writer, whose WriteMessages returns
// only after every record's batch completed; false with an injected Writer,
// which may keep the records it was handed.
func (t *Transport) ReleasesBatch() bool {
	return t.ownWriter != nil
}

// SendBatch writes outs as Send writes each and returns one Receipt per
// Outgoing once every record was acknowledged (driver.BatchSender). Every
// record goes to the writer in one WriteMessages call, so they travel in as
// few produce requests as the batch limits allow. An Outgoing Send would
// refuse (a blank queue, a delay no tier covers) fails the call before
// anything is written. A write refused before anything of it was sent is
// attempted again as a whole, like a lone Send; once some records were
// acknowledged and others not, it returns driver.SendErrors, one entry per
// Outgoing (nil: written; matching babelqueue.ErrPublishUnknown: may be
// stored; else not written) and attempts nothing again, so no record is
// written twice or behind a later one of its partition.
func (t *Transport) SendBatch(ctx context.Context, outs []*driver.Outgoing) ([]driver.Receipt, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	recs := getBatchRecords(len(outs))
	msgs, headers := recs.msgs, recs.headers
	receipts := make([]driver.Receipt, len(outs))
	for i, out := range outs {
		if out != nil && out.Intent == driver.IntentPublish && out.Delay <= 0 && len(out.Headers) == 0 && !wire.IsBlank(out.Queue) {
			msgs[i], headers = t.publishRecordInto(out, headers)
			receipts[i] = driver.Receipt{Partition: -1}
			continue
		}
		m, r, err := t.record(out)
		if err != nil {
			recs.release() // nothing was handed to a writer yet
			return nil, fmt.Errorf("kafka: send batch entry %d: %w", i, err)
		}
		msgs[i], receipts[i] = m, r
	}
	if err := t.writeBatch(ctx, msgs); err != nil {
		return nil, err // kafka-go may still hold records of a failed write: the slabs are dropped
	}
	if t.ownWriter != nil {
		// An injected Writer may keep the records it was handed.
		recs.release()
	}
	return receipts, nil
}

// record builds the record Send writes for out, and its receipt.
func (t *Transport) record(out *driver.Outgoing) (kafkago.Message, driver.Receipt, error) {
	r := driver.Receipt{Partition: -1}
	if out == nil {
		return kafkago.Message{}, r, wrapf(babelqueue.ErrInvalidOption, "send of a nil message")
	}
	if wire.IsBlank(out.Queue) {
		return kafkago.Message{}, r, ErrEmptyTopic
	}
	switch out.Intent {
	case driver.IntentPublish:
		if out.Delay > 0 {
			return t.delayedRecord(out)
		}
		return t.publishRecord(out), r, nil
	case driver.IntentRetry:
		if len(t.cfg.tiers) > 0 {
			n := TierForAttempt(out.Attempt, len(t.cfg.tiers))
			m, r := t.tierRecord(out, n, t.cfg.tiers[n-1])
			return m, r, nil
		}
		return t.republished(out, false), r, nil
	case driver.IntentRelease, driver.IntentDeadLetter, driver.IntentRedrive:
		return t.republished(out, false), r, nil
	case driver.IntentForward:
		return t.forwarded(out), r, nil
	case driver.IntentRestore:
		return t.restored(out, false), r, nil
	default:
		return kafkago.Message{}, r, wrapf(babelqueue.ErrInvalidOption, "send to %q: unknown intent %v", out.Queue, out.Intent)
	}
}

// fewBatchSize caps the partition batches of the writer a SendBatch
// goes through when its records, and as many again from each SendBatch
// in flight beside it, would not fill more than this many in any partition
// (the writer's cap is WithBatchSize when that is lower). kafka-go
// allocates and zeroes a partition batch's record slice for its whole cap
// when it opens the batch: some 150 KB per produce request at the default
// 1,000, which was the largest part of the memory and CPU a batch publish
// cost the client, while concurrent unkeyed calls of 100 records filled a
// partition batch with 50 to 90. Calls expected to fill more (a hot key,
// many calls at once, large calls) keep the configured cap: kafka-go sends
// a partition's batches one after another, so a lower cap would lower
// what one partition can take.
const fewBatchSize = 256

// batchWriter returns the writer for msgs, a SendBatch written while
// calls SendBatch writes (this one included) are in flight: the capped
// writer when its records' largest share of one partition, times calls,
// fits fewBatchSize; else the writer with the configured cap.
func (t *Transport) batchWriter(msgs []kafkago.Message, calls int) Writer {
	if t.fewWriter == nil {
		return t.writer // injected
	}
	if len(msgs)*calls <= fewBatchSize {
		return t.fewWriter
	}
	share := partitionShare(msgs, t.netMemo.partitions(msgs[0].Topic))
	if share == 0 || share*calls > fewBatchSize {
		return t.writer
	}
	return t.fewWriter
}

// maxSharePartitions is the most partitions partitionShare counts keyed
// records over.
const maxSharePartitions = 256

// partitionShare returns the most records of msgs that one partition gets
// (a keyed record the partition its key hashes to, unkeyed records spread
// evenly, as Murmur2Balancer places them), when all share one topic of
// partitions partitions; 0 when that cannot be told.
func partitionShare(msgs []kafkago.Message, partitions int) int {
	if partitions <= 0 {
		return 0
	}
	topic := msgs[0].Topic
	var counts [maxSharePartitions]int32
	unkeyed, most := 0, int32(0)
	for i := range msgs {
		switch {
		case msgs[i].Topic != topic:
			return 0
		case msgs[i].Key == nil:
			unkeyed++
		case partitions > maxSharePartitions:
			return 0
		default:
			p := PartitionForKey(msgs[i].Key, partitions)
			counts[p]++
			most = max(most, counts[p])
		}
	}
	return int(most) + (unkeyed+partitions-1)/partitions
}

// writeBatch hands msgs to a batching writer (batchWriter) in one call,
// classifying what failed as writeClassified does. While every record was refused
// before it was sent, the whole call is attempted again (at most
// writeAttempts times); an error then holds for every record. When the
// records had different outcomes it returns driver.SendErrors.
func (t *Transport) writeBatch(ctx context.Context, msgs []kafkago.Message) error {
	if t.isClosed() {
		return ErrClosed
	}
	if t.loneWriter != nil {
		t.writing.Add(1) // a lone Send meanwhile goes through the batching writer too
		defer t.writing.Add(-1)
	}
	calls := t.batchCalls.Add(1)
	defer t.batchCalls.Add(-1)
	w := t.batchWriter(msgs, int(calls))
	topic := msgs[0].Topic
	pause := writeBackoffMin
	for attempt := 1; ; attempt++ {
		started := ctx.Err() == nil
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return nil
		}
		var each kafkago.WriteErrors
		if errors.As(err, &each) && len(each) == len(msgs) && mixedOutcomes(each, started) {
			errs := make(driver.SendErrors, len(msgs))
			for i, e := range each {
				if e == nil {
					continue
				}
				errs[i] = writeError(msgs[i].Topic, e)
				if classifyWrite(e, started) == outcomeUnknown {
					errs[i] = fmt.Errorf("%w: %w", driver.ErrPublishUnknown, errs[i])
				}
			}
			return errs
		}
		if classifyWrite(err, started) == outcomeUnknown {
			return fmt.Errorf("%w: %w", driver.ErrPublishUnknown, writeError(topic, err))
		}
		if attempt >= writeAttempts || !retryable(err) || t.isClosed() || !sleep(ctx, t.cfg.clock, pause) {
			return writeError(topic, err)
		}
		pause = min(2*pause, writeBackoffMax)
	}
}

// mixedOutcomes reports whether the records of each did not all share one
// outcome: some were written, or some were refused and others may be
// stored.
func mixedOutcomes(each kafkago.WriteErrors, started bool) bool {
	refused, unknown := false, false
	for _, e := range each {
		switch {
		case e == nil:
			return true
		case classifyWrite(e, started) == outcomeUnknown:
			unknown = true
		default:
			refused = true
		}
	}
	return refused && unknown
}

// stringBytes returns the bytes of s without copying them. They are
// read-only: the writer only reads a record's value and header values
// (Writer), and the projection only parses them.
func stringBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// publishRecord builds the record of a new message out: the projection
// its writer gave (driver.Outgoing.Projection; else the body is parsed),
// extra headers, created_at timestamp, and key (nil for none).
func (t *Transport) publishRecord(out *driver.Outgoing) kafkago.Message {
	if len(out.Headers) == 0 {
		m, _ := t.publishRecordInto(out, nil)
		return m
	}
	p := out.Projection()
	ts := t.cfg.clock.Now()
	if p.HasCreatedAt {
		ts = time.UnixMilli(p.CreatedAt)
	}
	hs := withExtra(headerSet(p.Headers()), out.Headers)
	return kafkago.Message{Topic: out.Queue, Key: out.Key, Value: stringBytes(out.Body), Headers: toKafkaHeaders(hs), Time: ts}
}

// maxContractHeaders is the most headers a projection gives.
const maxContractHeaders = 6

// publishRecordInto is publishRecord of an out without extra headers, its
// headers appended to slab (returned grown): the record's Headers view
// their part of slab, which is never changed afterwards.
func (t *Transport) publishRecordInto(out *driver.Outgoing, slab []kafkago.Header) (kafkago.Message, []kafkago.Header) {
	p := out.Projection()
	var ts time.Time
	if p.HasCreatedAt {
		ts = time.UnixMilli(p.CreatedAt)
	} else {
		ts = t.cfg.clock.Now()
	}
	if cap(slab)-len(slab) < maxContractHeaders {
		slab = make([]kafkago.Header, 0, maxContractHeaders)
	}
	start := len(slab)
	for _, h := range [...]wire.Header{
		{Key: wire.HeaderJob, Value: p.Job},
		{Key: wire.HeaderTraceID, Value: p.TraceID},
		{Key: wire.HeaderMessageID, Value: p.MessageID},
		{Key: wire.HeaderSchemaVersion, Value: p.SchemaVersion},
		{Key: wire.HeaderSourceLang, Value: p.SourceLang},
		{Key: wire.HeaderAttempts, Value: p.Attempts},
	} {
		if !wire.IsBlank(h.Value) {
			slab = append(slab, kafkago.Header{Key: h.Key, Value: stringBytes(h.Value)})
		}
	}
	var hs []kafkago.Header
	if len(slab) > start {
		hs = slab[start:len(slab):len(slab)]
	}
	return kafkago.Message{Topic: out.Queue, Key: out.Key, Value: stringBytes(out.Body), Headers: hs, Time: ts}, slab
}
