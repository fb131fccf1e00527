package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/redrive"
	"github.com/babelqueue/babelqueue-go/core/wire"
)

var _ redrive.Redriver = (*Transport)(nil)

// RedriveCursorPrefix starts the name of the default redrive cursor.
const RedriveCursorPrefix = "bq-redrive."

// RedriveCursor returns the default cursor of a redrive of dlq: the
// consumer group "bq-redrive.<dlq>".
func RedriveCursor(dlq string) string { return RedriveCursorPrefix + dlq }

// Redrive implements redrive.Redriver; redrive.Run hands a
// *Transport the whole run. Progress is a durable cursor per DLQ, the
// committed offsets of the consumer group plan.Cursor (by default
// RedriveCursor(dlq)). A moved dead letter keeps its key byte for byte; a
// record that stays is written back verbatim to the tail of its partition.
// A run killed at any point and run again neither loses nor duplicates a
// dead letter; two runs never share a cursor (the second fails with
// ErrRedriveBusy before touching anything); a dry run writes and commits
// nothing. A discard run (redrive.WithDiscard) writes no copy of a
// discarded record: the cursor passes it. The cursor, the pending-write protocol and the lock group are
// described in DESIGN.md, "Redrive".
func (t *Transport) Redrive(ctx context.Context, dlq string, plan redrive.Plan) (*redrive.Result, error) {
	res := &redrive.Result{DryRun: plan.DryRun}
	if isBlank(dlq) {
		return res, ErrEmptyTopic
	}
	if t.isClosed() {
		return res, ErrClosed
	}
	if len(t.cfg.brokers) == 0 {
		return res, ErrNoBrokers
	}
	if err := t.checkConnection(ctx); err != nil {
		return res, fmt.Errorf("kafka: redrive %q: %w", dlq, err)
	}
	cursor := plan.Cursor
	if isBlank(cursor) {
		cursor = RedriveCursor(dlq)
	}
	b := newRedriveBroker(&t.cfg)
	defer b.close()
	r := &redriveRun{
		t: t, b: b, dlq: dlq, cursor: cursor, plan: plan, res: res,
		partsOf: make(map[string]int),
		ends:    make(map[topicPartition]int64),
	}
	var lock *redriveLock
	if !plan.DryRun {
		lctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		var err error
		if lock, err = acquireRedriveLock(ctx, b.client, cursor, cancel); err != nil {
			return res, fmt.Errorf("kafka: redrive %q (cursor %q): %w", dlq, cursor, err)
		}
		defer lock.release()
		ctx = lctx
	}
	err := r.run(ctx)
	if lock != nil {
		if lost := lock.lostErr(); lost != nil {
			err = joinErr(err, lost)
		}
	}
	if err != nil {
		return res, fmt.Errorf("kafka: redrive %q (cursor %q): %w", dlq, cursor, err)
	}
	return res, nil
}

// Crash points of a redrive write, for tests: redriveFault, when set, is
// called at each, and an error it returns stops the run right there, as a
// kill of the process would (nothing more is written or committed).
const (
	redriveAfterPending = "after-pending" // cursor metadata committed, copy not written
	redriveAfterWrite   = "after-write"   // copy written, cursor not passed
)

// redriveFault is the test hook of the crash points; nil in production.
// kind is "move" or "keep".
var redriveFault func(point, kind string, partition int, offset int64) error

// topicPartition names one partition of a topic.
type topicPartition struct {
	topic     string
	partition int
}

// redriveRun is one Redrive call.
type redriveRun struct {
	t      *Transport
	b      *redriveBroker
	dlq    string
	cursor string
	plan   redrive.Plan
	res    *redrive.Result

	partsOf map[string]int           // partition count of target topics
	ends    map[topicPartition]int64 // lower bound of where the next write to a partition lands
}

// partitionCursor is the progress of one DLQ partition within a run.
type partitionCursor struct {
	partition int
	// next is the offset after the last record handled.
	next int64
	// dirty: records up to next were handled but the committed cursor is
	// still before next.
	dirty bool
}

func (r *redriveRun) run(ctx context.Context) error {
	parts, err := r.b.partitions(ctx, r.dlq)
	if err != nil {
		return err
	}
	first, end, err := r.b.bounds(ctx, r.dlq, parts)
	if err != nil {
		return err
	}
	committed, err := r.b.committed(ctx, r.cursor, r.dlq, parts)
	if err != nil {
		return err
	}
	start := make(map[int]int64, len(parts))
	total := 0
	for _, p := range parts {
		s := first[p]
		if c, ok := committed[p]; ok && c.CommittedOffset >= 0 {
			r.res.Resumed = true
			s = max(s, c.CommittedOffset)
		}
		start[p] = s
		if end[p] > s {
			total += int(end[p] - s)
		}
		// Writes back to the DLQ land at or after its high-water mark.
		r.ends[topicPartition{r.dlq, p}] = end[p]
	}
	if r.plan.OnTotal != nil {
		r.plan.OnTotal(total)
	}
	for _, p := range parts {
		if r.maxReached(nil) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var pending *redrivePending
		if c, ok := committed[p]; ok && !r.plan.DryRun {
			// The cursor is at a pending write's first record, or within
			// its records when a run stopped while passing them.
			if pw, ok := decodeRedrivePending(c.Metadata); ok && start[p] >= pw.Offset && start[p] <= pw.Last {
				pending = &pw
			}
		}
		if err := r.partition(ctx, p, start[p], end[p], pending); err != nil {
			return err
		}
	}
	return nil
}

// maxReached reports whether the moves done and those of the batch being
// filled reach plan.Max.
func (r *redriveRun) maxReached(b *redriveBatch) bool {
	pending := 0
	if b != nil {
		pending = b.moves
	}
	return r.plan.Max > 0 && r.res.Moved+r.res.Discarded+pending >= r.plan.Max
}

// Bounds of a batch: consecutive DLQ records whose copies go to the same
// partition are written by one produce request, a single record batch the
// broker appends whole or not at all.
const (
	redriveBatchRecords = 256
	redriveBatchBytes   = 512 << 10
)

// redriveBatch is consecutive records of one DLQ partition whose copies go
// to one partition.
type redriveBatch struct {
	to     topicPartition
	kind   string          // "move" or "keep"
	recs   []redriveRecord // the DLQ records, in offset order
	copies []redriveRecord
	items  []redrive.Item
	bytes  int
	moves  int
}

func (b *redriveBatch) add(rec, cp redriveRecord, it redrive.Item) {
	b.recs = append(b.recs, rec)
	b.copies = append(b.copies, cp)
	b.items = append(b.items, it)
	b.bytes += recordSize(cp)
	if it.Outcome == redrive.Moved {
		b.moves++
	}
}

// fits reports whether a copy of size n for to can join the batch.
func (b *redriveBatch) fits(to topicPartition, n int) bool {
	return b.to == to && len(b.recs) < redriveBatchRecords && b.bytes+n <= redriveBatchBytes
}

// recordSize approximates the bytes a record takes in a batch.
func recordSize(r redriveRecord) int {
	n := len(r.Key) + len(r.Value) + 24
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 4
	}
	return n
}

// partition redrives records [from, to) of DLQ partition p. pending is
// the write an interrupted run recorded at from, if any.
func (r *redriveRun) partition(ctx context.Context, p int, from, to int64, pending *redrivePending) error {
	c := &partitionCursor{partition: p, next: from}
	written := false // the copies of pending exist
	if pending != nil {
		var err error
		if written, err = r.copyWritten(ctx, *pending, p); err != nil {
			return fmt.Errorf("%w: looking for the copies an interrupted run may have written of %s/%d..%d: %w",
				babelqueue.ErrSettle, r.dlq, p, pending.Offset, err)
		}
	}
	var b *redriveBatch
	flush := func() error {
		if b == nil {
			return nil
		}
		batch := b
		b = nil
		return r.writeBatch(ctx, c, batch)
	}
	err := r.b.read(ctx, r.dlq, p, from, to, func(rec redriveRecord) error {
		if r.maxReached(b) {
			return errStopRead
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		msg := &babelqueue.ReceivedMessage{Body: string(rec.Value), Queue: r.dlq, Headers: headerMap(rec.Headers), Key: rec.Key}
		it, _ := r.plan.Examine(r.dlq, msg)
		it.Position = strconv.Itoa(rec.Partition) + "/" + strconv.FormatInt(rec.Offset, 10)
		if r.plan.DryRun {
			it.Outcome = redrive.DryOutcome(it.Outcome)
			r.plan.Report(r.res, it)
			return nil
		}
		if written && rec.Offset >= pending.Offset && rec.Offset <= pending.Last {
			// Its copy was written before an interrupted run could pass it.
			if pending.Topic == r.dlq {
				it.Outcome, it.Disposition, it.Target = redrive.AlreadyKept, redrive.DispositionRestored, ""
			} else {
				it.Outcome, it.Disposition, it.Target = redrive.AlreadyMoved, redrive.DispositionRemoved, pending.Topic
			}
			it.Err = nil
			c.next, c.dirty = rec.Offset+1, true
			r.plan.Report(r.res, it)
			return nil
		}
		if it.Outcome == redrive.Discarded {
			// Written nowhere: the records before it are written first,
			// then the cursor passes it (committed with the next write or
			// at the end of the partition).
			if err := flush(); err != nil {
				return err
			}
			c.next, c.dirty = rec.Offset+1, true
			it.Disposition = redrive.DispositionRemoved
			r.plan.Report(r.res, it)
			return nil
		}
		dest, kind, cp, err := r.destination(ctx, rec, msg, &it)
		if err != nil {
			ferr := flush()
			r.failed(it, err)
			return joinErr(ferr, err)
		}
		if b != nil && !b.fits(dest, recordSize(cp)) {
			if err := flush(); err != nil {
				return err
			}
		}
		if b == nil {
			b = &redriveBatch{to: dest, kind: kind}
		}
		b.add(rec, cp, it)
		return nil
	})
	if err == nil {
		err = flush()
	}
	// On an error the batch being filled is dropped: its records were
	// neither written nor passed, and the next run examines them.
	if c.dirty {
		// Records up to c.next were handled: the cursor passes them, even
		// when ctx ended the run. Stopped within the records of a pending
		// write found written, the cursor keeps its metadata, so the next
		// run passes the rest of them too.
		metadata := ""
		if written && c.next <= pending.Last {
			metadata = pending.encode()
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redriveFlushTimeout)
		defer cancel()
		if cerr := r.b.commit(fctx, r.cursor, r.dlq, p, c.next, metadata); cerr != nil {
			return joinErr(err, fmt.Errorf("%w: %w", babelqueue.ErrSettle, cerr))
		}
		c.dirty = false
	}
	return err
}

func joinErr(err, cerr error) error {
	if err == nil {
		return cerr
	}
	return fmt.Errorf("%w (and then: %w)", err, cerr)
}

// destination returns where the copy of rec goes and the copy: its target
// partition for a move, the tail of its DLQ partition otherwise.
func (r *redriveRun) destination(ctx context.Context, rec redriveRecord, msg *babelqueue.ReceivedMessage, it *redrive.Item) (topicPartition, string, redriveRecord, error) {
	if it.Outcome == redrive.Moved {
		moved, err := r.movedCopy(msg, rec)
		if err == nil {
			n, err := r.partitionsOf(ctx, it.Target)
			if err != nil {
				return topicPartition{}, "", redriveRecord{}, fmt.Errorf("%w: redrive %s to %s: %w", babelqueue.ErrSettle, it.Position, it.Target, err)
			}
			tp := rec.Partition % n
			if rec.Key != nil {
				tp = PartitionForKey(rec.Key, n)
			}
			return topicPartition{it.Target, tp}, "move", moved, nil
		}
		// Not expected for a decoded envelope: the record stays.
		it.Outcome, it.Err, it.Target = redrive.Undecodable, err, ""
	}
	return topicPartition{r.dlq, rec.Partition}, "keep", r.keptCopy(rec), nil
}

// failed reports a record the run stopped on: the cursor stays on it.
func (r *redriveRun) failed(it redrive.Item, err error) {
	it.Outcome, it.Err, it.Disposition = redrive.Failed, err, redrive.DispositionReserved
	r.plan.Report(r.res, it)
}

// writeBatch writes a batch by the write protocol and reports its records.
// A batch the broker refused as too large, before appending anything, is
// written again record by record.
func (r *redriveRun) writeBatch(ctx context.Context, c *partitionCursor, b *redriveBatch) error {
	err := r.write(ctx, c, b)
	if err != nil && errors.Is(err, ErrRecordTooLarge) && len(b.recs) > 1 {
		for i := range b.recs {
			one := &redriveBatch{to: b.to, kind: b.kind, recs: b.recs[i : i+1], copies: b.copies[i : i+1], items: b.items[i : i+1]}
			if err := r.writeBatch(ctx, c, one); err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		first, last := b.items[0].Position, b.items[len(b.items)-1].Position
		err = fmt.Errorf("%w: redrive: writing the copies of %s..%s to %s/%d: %w", babelqueue.ErrSettle, first, last, b.to.topic, b.to.partition, err)
		for _, it := range b.items {
			r.failed(it, err)
		}
		return err
	}
	for _, it := range b.items {
		it.Disposition = redrive.DispositionRestored
		if it.Outcome == redrive.Moved {
			it.Disposition = redrive.DispositionRemoved
		}
		r.plan.Report(r.res, it)
	}
	return nil
}

// write runs the write protocol for a batch: pending metadata, the
// acknowledged write, then the cursor marked to pass its records.
func (r *redriveRun) write(ctx context.Context, c *partitionCursor, b *redriveBatch) error {
	from, err := r.lowerBound(ctx, b.to)
	if err != nil {
		return err
	}
	first, last := b.recs[0], b.recs[len(b.recs)-1]
	pw := redrivePending{V: redrivePendingVersion, Offset: first.Offset, Last: last.Offset, Topic: b.to.topic, Partition: b.to.partition, From: from}
	if err := r.b.commit(ctx, r.cursor, r.dlq, first.Partition, first.Offset, pw.encode()); err != nil {
		return err
	}
	c.dirty = false // the cursor is at first.Offset, past everything before it
	if err := fault(redriveAfterPending, b.kind, first); err != nil {
		return err
	}
	off, err := r.b.produce(ctx, b.to.topic, b.to.partition, b.copies...)
	if err != nil {
		return err
	}
	if off >= from {
		r.ends[b.to] = off + int64(len(b.copies))
	}
	if err := fault(redriveAfterWrite, b.kind, first); err != nil {
		return err
	}
	c.next, c.dirty = last.Offset+1, true
	return nil
}

func fault(point, kind string, rec redriveRecord) error {
	if redriveFault == nil {
		return nil
	}
	return redriveFault(point, kind, rec.Partition, rec.Offset)
}

// lowerBound returns an offset at or before which the next write to tp
// lands: the end offset read once, then the offset after this run's own
// last write there (other producers only push a copy further). It saves a
// round trip per record.
func (r *redriveRun) lowerBound(ctx context.Context, tp topicPartition) (int64, error) {
	if v, ok := r.ends[tp]; ok {
		return v, nil
	}
	_, next, err := r.b.bounds(ctx, tp.topic, []int{tp.partition})
	if err != nil {
		return 0, err
	}
	r.ends[tp] = next[tp.partition]
	return next[tp.partition], nil
}

// partitionsOf returns the partition count of a target topic; a missing
// topic is an error (a redrive never creates one).
func (r *redriveRun) partitionsOf(ctx context.Context, topic string) (int, error) {
	if n, ok := r.partsOf[topic]; ok {
		return n, nil
	}
	parts, err := r.b.partitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	r.partsOf[topic] = len(parts)
	return len(parts), nil
}

// copyWritten reports whether the write pw recorded at DLQ partition p
// happened: a record on pw's partition, from pw.From to its current end,
// whose bq-redrive-source names the first record of the write (a batch is
// appended whole or not at all).
func (r *redriveRun) copyWritten(ctx context.Context, pw redrivePending, p int) (bool, error) {
	_, next, err := r.b.bounds(ctx, pw.Topic, []int{pw.Partition})
	if err != nil {
		return false, err
	}
	want := redriveSource(r.dlq, p, pw.Offset)
	found := false
	err = r.b.read(ctx, pw.Topic, pw.Partition, pw.From, next[pw.Partition], func(x redriveRecord) error {
		if v, ok := lastHeader(x.Headers, wire.HeaderRedriveSource); ok && v == want {
			found = true
			return errStopRead
		}
		return nil
	})
	return found, err
}

// redriveSource is the bq-redrive-source value of a DLQ record.
func redriveSource(dlq string, partition int, offset int64) string {
	return dlq + "/" + strconv.Itoa(partition) + "/" + strconv.FormatInt(offset, 10)
}

// movedCopy is the record a dead letter is moved as.
func (r *redriveRun) movedCopy(msg *babelqueue.ReceivedMessage, rec redriveRecord) (redriveRecord, error) {
	cleared, err := wire.ClearDeadLetter(rec.Value)
	if err != nil {
		return redriveRecord{}, fmt.Errorf("kafka: redrive: clearing the dead letter: %w", err)
	}
	hs, ts := projection(string(cleared), r.t.cfg.clock.Now())
	hs = keepRouting(hs, rec.Headers)
	hs.set(wire.HeaderAttempts, "0")
	hs = withExtra(hs, r.plan.MovedHeaders(msg))
	hs.set(wire.HeaderRedriveSource, redriveSource(r.dlq, rec.Partition, rec.Offset))
	return redriveRecord{Key: rec.Key, Value: cleared, Headers: toKafkaHeaders(hs), Time: ts}, nil
}

// keptCopy is the verbatim copy a record that stays is written back as:
// its key, value and headers in order, bq-redrive-source set (replaced in
// place when present, so the headers never grow), a fresh timestamp.
func (r *redriveRun) keptCopy(rec redriveRecord) redriveRecord {
	src := []byte(redriveSource(r.dlq, rec.Partition, rec.Offset))
	hs := make([]kafkago.Header, 0, len(rec.Headers)+1)
	set := false
	for _, h := range rec.Headers {
		if h.Key == wire.HeaderRedriveSource {
			if set {
				continue
			}
			h.Value, set = src, true
		}
		hs = append(hs, h)
	}
	if !set {
		hs = append(hs, kafkago.Header{Key: wire.HeaderRedriveSource, Value: src})
	}
	return redriveRecord{Key: rec.Key, Value: rec.Value, Headers: hs, Time: r.t.cfg.clock.Now()}
}
