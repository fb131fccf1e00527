package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"sync"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// kafka-go's Reader decodes a record key of length 0 (an empty key) and of
// length -1 (a null key) alike, as a nil Message.Key, so a record written
// with an empty key would be written back, retried, re-injected and
// dead-lettered with a null one. The fetch tap reads each record's key
// length from the bytes of the reader's own fetches (fetchScanner.onRecord),
// and keyReader gives a record whose key is empty a non-nil empty Key. See
// DESIGN.md, "Keys".

// recordKey is where a record is and the length of its key: -1 for a null
// key, 0 for an empty one.
type recordKey struct {
	Topic     string
	Partition int32
	Offset    int64
	KeyLen    int64
}

// batchRecordsHeaderLen is what a v2 batch holds between its first
// batchHeaderLen bytes and its records: producerId(8) producerEpoch(2)
// baseSequence(4) recordCount(4).
const batchRecordsHeaderLen = 18

// recordPrefixMax is the most bytes of a record, after its length, that
// hold its key length: attributes(1) timestampDelta(varlong, 10)
// offsetDelta(varint, 5) keyLength(varint, 5).
const recordPrefixMax = 1 + binary.MaxVarintLen64 + 5 + 5

// maxPackedBatch bounds the compressed batch a scanner gathers to read its
// keys, and maxUnpackedBatch what it decompresses; a larger batch's keys
// are not read (its records keep kafka-go's key). A reader's fetch is at
// most 1 MiB unless its first batch is larger.
const (
	maxPackedBatch   = 8 << 20
	maxUnpackedBatch = 64 << 20
)

// controlBit is the attributes bit of a control batch (transaction
// markers), whose records kafka-go does not return.
const controlBit = 1 << 5

// recordWalk is the state of fetchScanner walking one batch's records.
type recordWalk struct {
	base    int64 // the batch's base offset
	left    int64 // bytes of the batch after the current point
	count   int32 // records not yet walked
	varint  uint64
	shift   uint
	rest    int64  // bytes of the current record after its prefix
	collect int64  // bytes still to gather into packed
	packed  []byte // a compressed batch's records
	codec   compress.Compression
	// unpacked holds them decompressed; like packed, its memory is kept
	// for the next batch unless it grew beyond 64 KiB.
	unpacked bytes.Buffer
}

// walkBatch walks the records of the batch at base whose header was just
// read: rest bytes of it follow in this fetch, all of it when whole. An
// uncompressed batch's records are read as they pass; a compressed one is
// gathered whole, then decompressed. A control batch, a compressed batch
// cut by the end of the fetch or larger than maxPackedBatch, and bytes that
// do not read as records are passed over.
func (s *fetchScanner) walkBatch(base int64, attrs int16, rest int64, whole bool) {
	codec := compress.Compression(attrs & 7)
	if rest < batchRecordsHeaderLen || attrs&controlBit != 0 || (codec != 0 && (!whole || rest > maxPackedBatch || codec.Codec() == nil)) {
		s.endBatch(rest)
		return
	}
	s.walk.base, s.walk.left, s.walk.codec, s.walk.packed = base, rest-batchRecordsHeaderLen, codec, s.walk.packed[:0]
	s.walk.count, s.walk.rest, s.walk.collect = 0, 0, 0
	s.gather(batchRecordsHeaderLen, func(s *fetchScanner, b []byte) {
		s.walk.count = be32(b[14:])
		if s.walk.codec == 0 {
			s.nextRecord()
			return
		}
		s.walk.collect = s.walk.left
		s.walk.left = 0
		s.gather(0, (*fetchScanner).unpackBatch)
	})
}

// endBatch passes over the n bytes left of the batch and goes on to the
// next one.
func (s *fetchScanner) endBatch(n int64) {
	s.skip = n
	s.walk.left = 0
	if cap(s.walk.packed) > 1<<16 {
		s.walk.packed = nil // do not hold a large batch's buffer
	}
	if s.walk.unpacked.Cap() > 1<<16 {
		s.walk.unpacked = bytes.Buffer{}
	}
	s.gather(0, func(s *fetchScanner, _ []byte) { s.nextBatch() })
}

// nextRecord starts reading the length of the next record.
func (s *fetchScanner) nextRecord() {
	if s.walk.count <= 0 || s.walk.left <= 0 {
		s.endBatch(s.walk.left)
		return
	}
	s.walk.varint, s.walk.shift = 0, 0
	s.gather(1, (*fetchScanner).recordLenByte)
}

// recordLenByte reads one byte of a record's length (a zigzag varint).
func (s *fetchScanner) recordLenByte(b []byte) {
	s.walk.left--
	s.walk.varint |= uint64(b[0]&0x7f) << s.walk.shift
	if b[0]&0x80 != 0 {
		s.walk.shift += 7
		if s.walk.shift > 28 || s.walk.left <= 0 {
			s.endBatch(max(s.walk.left, 0))
			return
		}
		s.gather(1, (*fetchScanner).recordLenByte)
		return
	}
	length := int64(int32(s.walk.varint>>1) ^ -int32(s.walk.varint&1))
	if length <= 0 || length > s.walk.left {
		// Cut by the end of the fetch (kafka-go does not return it either),
		// or not a record: nothing more to read in this batch.
		s.endBatch(s.walk.left)
		return
	}
	s.walk.left -= length
	n := min(length, recordPrefixMax)
	s.walk.rest = length - n
	s.gather(int(n), (*fetchScanner).recordPrefix)
}

// recordPrefix reads a record's key length from its first bytes.
func (s *fetchScanner) recordPrefix(b []byte) {
	offsetDelta, keyLen, ok := recordKeyOf(b)
	if !ok {
		s.endBatch(s.walk.rest + s.walk.left)
		return
	}
	s.onRecord(recordKey{Topic: s.topic, Partition: s.partition, Offset: s.walk.base + offsetDelta, KeyLen: keyLen})
	s.walk.count--
	s.skip = s.walk.rest
	s.gather(0, func(s *fetchScanner, _ []byte) { s.nextRecord() })
}

// recordKeyOf reads, from the bytes of a record after its length, its
// offset delta and key length.
func recordKeyOf(b []byte) (offsetDelta, keyLen int64, ok bool) {
	if len(b) < 1 {
		return 0, 0, false
	}
	b = b[1:] // attributes
	for i := 0; i < 3; i++ {
		v, n := binary.Varint(b)
		if n <= 0 {
			return 0, 0, false
		}
		b = b[n:]
		switch i {
		case 1:
			offsetDelta = v
		case 2:
			keyLen = v
		}
	}
	return offsetDelta, keyLen, offsetDelta >= 0 && keyLen >= -1
}

// unpackBatch decompresses a gathered compressed batch and reads the key
// length of each of its records.
func (s *fetchScanner) unpackBatch(_ []byte) {
	r := s.walk.codec.Codec().NewReader(bytes.NewReader(s.walk.packed))
	s.walk.unpacked.Reset()
	_, err := s.walk.unpacked.ReadFrom(io.LimitReader(r, maxUnpackedBatch+1))
	_ = r.Close()
	records := s.walk.unpacked.Bytes()
	if err == nil && len(records) <= maxUnpackedBatch {
		for n := s.walk.count; n > 0 && len(records) > 0; n-- {
			length, m := binary.Varint(records)
			if m <= 0 || length <= 0 || length > int64(len(records)-m) {
				break
			}
			rec := records[m : m+int(length)]
			records = records[m+int(length):]
			offsetDelta, keyLen, ok := recordKeyOf(rec[:min(len(rec), recordPrefixMax)])
			if !ok {
				break
			}
			s.onRecord(recordKey{Topic: s.topic, Partition: s.partition, Offset: s.walk.base + offsetDelta, KeyLen: keyLen})
		}
	}
	s.endBatch(0)
}

// emptyKeys holds the offsets of one partition's records with an empty key
// that were fetched and not yet looked up, at most maxEmptyKeys of them.
type emptyKeys struct {
	topic     string
	partition int32

	mu      sync.Mutex
	offsets []int64 // ascending
}

// maxEmptyKeys bounds an emptyKeys: a reader runs ahead of its records by
// its queue and one fetch.
const maxEmptyKeys = 1 << 15

func newEmptyKeys(topic string, partition int) *emptyKeys {
	return &emptyKeys{topic: topic, partition: int32(partition)}
}

// add records k when it is an empty key of the partition. A record fetched
// again (a reader that reconnected or fetched from an earlier offset)
// replaces what the log held from its offset on.
func (e *emptyKeys) add(k recordKey) {
	if k.Topic != e.topic || k.Partition != e.partition {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	i := len(e.offsets)
	for i > 0 && e.offsets[i-1] >= k.Offset {
		i--
	}
	e.offsets = e.offsets[:i]
	if k.KeyLen != 0 {
		return
	}
	e.offsets = append(e.offsets, k.Offset)
	if len(e.offsets) > maxEmptyKeys {
		n := copy(e.offsets, e.offsets[maxEmptyKeys/4:])
		e.offsets = e.offsets[:n]
	}
}

// empty reports whether the record at offset has an empty key, forgetting
// the offsets up to it: records are looked up in offset order.
func (e *emptyKeys) empty(offset int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	i := 0
	for i < len(e.offsets) && e.offsets[i] <= offset {
		i++
	}
	found := i > 0 && e.offsets[i-1] == offset
	if i > 0 {
		n := copy(e.offsets, e.offsets[i:])
		e.offsets = e.offsets[:n]
	}
	return found
}

// keyReader is a partition reader whose records with an empty key carry a
// non-nil empty Key, as the broker holds it; a null key stays nil.
type keyReader struct {
	partitionReader
	keys *emptyKeys
}

// FetchMessage returns the next record with its key as written.
func (r *keyReader) FetchMessage(ctx context.Context) (kafkago.Message, error) {
	m, err := r.partitionReader.FetchMessage(ctx)
	if err == nil && m.Key == nil && r.keys.empty(m.Offset) {
		m.Key = []byte{}
	}
	return m, err
}
