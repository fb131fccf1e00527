package kafka

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// commitBatchSize is the number of acknowledged records after which a
// commitBatcher hands their commits to the group reader at once.
const commitBatchSize = 128

// commitHandOverDelay bounds how long a commitBatcher keeps the commit of
// an acknowledged record before handing it to the group reader, however few
// records are acknowledged after it.
const commitHandOverDelay = 2 * time.Millisecond

// commitFlushTimeout bounds a hand-over that was not asked for by a caller
// with its own context (the delayed hand-over, and the one of Close): the
// group reader takes commits as soon as it has a group generation, so this
// is only reached when it cannot rejoin its group.
const commitFlushTimeout = 10 * time.Second

// commitBatcher gathers the commits handed to a group reader that commits
// asynchronously (a commit interval above 0) and hands over the highest
// offset of each partition after commitBatchSize commits or
// commitHandOverDelay, whichever comes first, and what is left when it is
// closed; closed, it refuses commits with io.ErrClosedPipe. It receives only
// ends of settled prefixes from the ledger, so it changes no guarantee of
// Ack (DESIGN.md, section 3).
type commitBatcher struct {
	r   Reader
	log *slog.Logger

	// flushMu orders the hand-overs: a batch is taken and handed over
	// under it, so a later batch never reaches the group reader first.
	flushMu sync.Mutex

	mu      sync.Mutex
	pending []kafkago.Message // the highest acknowledged record per partition
	acks    int               // acknowledgements since the last hand-over
	timer   *time.Timer       // the delayed hand-over; armed while pending is not empty
	armed   bool
	closed  bool
}

func newCommitBatcher(r Reader, log *slog.Logger) *commitBatcher {
	b := &commitBatcher{r: r, log: log}
	b.timer = time.AfterFunc(time.Hour, b.delayedFlush)
	b.timer.Stop()
	return b
}

// commit records the commits of msgs, handing the batch over when it is
// full. It fails with io.ErrClosedPipe once the batcher was closed.
func (b *commitBatcher) commit(ctx context.Context, msgs []kafkago.Message) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return io.ErrClosedPipe
	}
	for i := range msgs {
		b.merge(&msgs[i])
	}
	b.acks += len(msgs)
	full := b.acks >= commitBatchSize
	if !full && !b.armed {
		b.armed = true
		b.timer.Reset(commitHandOverDelay)
	}
	b.mu.Unlock()
	if full {
		return b.flush(ctx)
	}
	return nil
}

// merge keeps m as the commit of its partition unless a later record of
// that partition was already acknowledged. Only topic, partition and
// offset are kept.
func (b *commitBatcher) merge(m *kafkago.Message) {
	for i := range b.pending {
		p := &b.pending[i]
		if p.Partition == m.Partition && p.Topic == m.Topic {
			if m.Offset > p.Offset {
				p.Offset = m.Offset
			}
			return
		}
	}
	b.pending = append(b.pending, kafkago.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset})
}

// flush hands the pending commits to the group reader.
func (b *commitBatcher) flush(ctx context.Context) error {
	b.flushMu.Lock()
	defer b.flushMu.Unlock()
	b.mu.Lock()
	batch := b.pending
	b.pending = nil
	b.acks = 0
	if b.armed {
		b.armed = false
		b.timer.Stop()
	}
	b.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := b.r.CommitMessages(ctx, batch...); err != nil {
		return wrapf(err, "commit %d partition offsets of %s", len(batch), batch[0].Topic)
	}
	return nil
}

// delayedFlush is the delayed hand-over. Its error cannot reach the Ack
// that queued the commit, which returned already: it is logged, and the
// records stay uncommitted, to be delivered again to the partition's next
// reader.
func (b *commitBatcher) delayedFlush() {
	ctx, cancel := context.WithTimeout(context.Background(), commitFlushTimeout)
	defer cancel()
	if err := b.flush(ctx); err != nil {
		b.log.Error("kafka: acknowledged records not committed; they will be delivered again", "error", err)
	}
}

// close hands over what is pending and refuses later commits. It waits for
// a hand-over in progress, so that every commit accepted before is with
// the group reader when close returns.
func (b *commitBatcher) close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), commitFlushTimeout)
	defer cancel()
	return b.flush(ctx)
}
