package kafka

import (
	"sync"

	kafkago "github.com/segmentio/kafka-go"
)

// batchRecords holds the records of one SendBatch and the contract headers
// of its new messages, back to back. Once the transport's own kafka-go
// Writer acknowledged every record of a batch, kafka-go no longer reads
// them (WriteMessages returns only after each record's batch completed),
// so the slabs serve a later SendBatch instead of being garbage.
type batchRecords struct {
	msgs    []kafkago.Message
	headers []kafkago.Header
}

// maxPooledBatch is the most records whose slabs are kept for reuse; a
// bigger batch allocates its own.
const maxPooledBatch = 4096

var batchRecordsPool = sync.Pool{New: func() any { return new(batchRecords) }}

// getBatchRecords returns slabs for n records: msgs of length n, headers
// empty with room for the contract headers of each.
func getBatchRecords(n int) *batchRecords {
	b := batchRecordsPool.Get().(*batchRecords)
	if cap(b.msgs) < n {
		b.msgs = make([]kafkago.Message, n)
	}
	if cap(b.headers) < maxContractHeaders*n {
		b.headers = make([]kafkago.Header, 0, maxContractHeaders*n)
	}
	b.msgs, b.headers = b.msgs[:n], b.headers[:0]
	return b
}

// release keeps the slabs for a later batch, the records cleared so that
// they pin no body or key of the caller. The header slab is not cleared:
// it refers only to the contract header text of past records (ids, URN,
// language: small immutable strings, never a body), and the next batch
// overwrites what it uses, so clearing it cost a write barrier per header
// for nothing. Only a batch kafka-go is
// done with may be released.
func (b *batchRecords) release() {
	if cap(b.msgs) > maxPooledBatch {
		return
	}
	clear(b.msgs)
	batchRecordsPool.Put(b)
}
