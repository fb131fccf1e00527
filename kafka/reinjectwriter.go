package kafka

import "time"

// reinjectLinger is how long the re-injector's own writer lets a partition
// batch wait before sending it. A worker writes records back only once they
// are due, all of them in one call, so there is no company worth waiting
// for: kafka-go adds the records of one call to its partition batches
// before this timer can send them, and the batch goes out at once.
const reinjectLinger = time.Microsecond

// newReinjectWriter returns the writer a Run writes records back through
// and the function that closes it. With the transport's own writers it is
// another kafka-go Writer on the same connections, partitioner and acks,
// with batches of up to singlesBatchSize records and no linger: a due record
// is neither held for the batching writer's linger nor, when several go to
// one partition, sent one produce request after another as the lone
// writer's batches of one would be. The batch cap is below maxReinjectBatch
// because kafka-go allocates a batch's record slice for its whole cap, and
// a paced re-injection opens a batch for a record or two (a 500-record cap
// cost about 95 KB allocated per re-injected record, 128 about 37 KB); a
// larger backlog write goes out in several requests. An injected writer
// (WithWriter) is used as it is.
func (t *Transport) newReinjectWriter() (w Writer, closeWriter func()) {
	if t.ownWriter == nil {
		return t.writer, func() {}
	}
	kw := t.newWriter(min(maxReinjectBatch, singlesBatchSize))
	kw.BatchTimeout = reinjectLinger
	return kw, func() {
		if err := kw.Close(); err != nil {
			t.cfg.log().Warn("kafka: close re-inject writer", "err", err)
		}
	}
}
