package kafka

import (
	"encoding/binary"
	"errors"
)

// A record batch (magic v2) starts with a fixed header; kafka-go decodes its
// records but keeps neither the timestamp type nor maxTimestamp, so this file
// reads them from the bytes of a fetch response. See DESIGN.md, "Append time".

// batchHeaderLen is how many leading bytes of a record batch batchHeaderOf
// reads: baseOffset(8) batchLength(4) partitionLeaderEpoch(4) magic(1)
// crc(4) attributes(2) lastOffsetDelta(4) baseTimestamp(8) maxTimestamp(8).
const batchHeaderLen = 43

// batchPrefixLen is the part of batchHeaderLen that every message set entry
// has, whatever its magic: the first offset and the length that follows it.
const batchPrefixLen = 12

// timestampTypeBit is the attributes bit that marks a LogAppendTime batch.
const timestampTypeBit = 1 << 3

// errBatchHeader reports bytes that are not a record batch header.
var errBatchHeader = errors.New("kafka: malformed record batch header")

// batchHeader is what a record batch header says about its records' offsets
// and timestamps.
type batchHeader struct {
	Topic     string
	Partition int32
	// BaseOffset and LastOffset bound the offsets of the batch's records.
	BaseOffset int64
	LastOffset int64
	// LogAppendTime is the timestamp type bit: the broker stamped the batch
	// and every record's timestamp is MaxTimestamp.
	LogAppendTime bool
	// MaxTimestamp is the batch's maxTimestamp, in Unix milliseconds.
	MaxTimestamp int64
}

// batchHeaderOf parses the first batchHeaderLen bytes of a magic v2 record
// batch. It never panics; it returns errBatchHeader for fewer bytes, another
// magic, a length too short for a header or offsets that run backwards.
func batchHeaderOf(b []byte) (batchHeader, error) {
	if len(b) < batchHeaderLen {
		return batchHeader{}, errBatchHeader
	}
	base := int64(binary.BigEndian.Uint64(b[0:]))
	length := int32(binary.BigEndian.Uint32(b[8:]))
	magic := b[16]
	attrs := int16(binary.BigEndian.Uint16(b[21:]))
	lastDelta := int32(binary.BigEndian.Uint32(b[23:]))
	maxTS := int64(binary.BigEndian.Uint64(b[35:]))
	if magic != 2 || length < batchHeaderLen-batchPrefixLen || lastDelta < 0 || base < 0 {
		return batchHeader{}, errBatchHeader
	}
	last := base + int64(lastDelta)
	if last < base { // overflow
		return batchHeader{}, errBatchHeader
	}
	return batchHeader{BaseOffset: base, LastOffset: last, LogAppendTime: attrs&timestampTypeBit != 0, MaxTimestamp: maxTS}, nil
}

// fetchAPIKey is the Kafka API key of Fetch.
const fetchAPIKey = 1

// maxScannedFetchVersion is the newest Fetch version fetchScanner reads:
// v12 and later use the flexible (compact) encoding, which kafka-go's
// Reader never requests (it asks for v2, v5 or v10).
const maxScannedFetchVersion = 11

// maxTopicNameLen bounds the topic names fetchScanner keeps (Kafka allows
// 249 characters); a longer one is skipped and its batches are not reported.
const maxTopicNameLen = 255

// fetchScanner reports the header of every magic v2 record batch of a
// Fetch response body fed to it in pieces. The body starts after the
// response header; a batch is reported as soon as its batchHeaderLen bytes
// have passed. It keeps no more than one batch header of the bytes, never
// allocates per record and never panics: on bytes it cannot read it stops
// reporting (done).
type fetchScanner struct {
	version int16
	onBatch func(batchHeader) // nil: batch headers are not reported
	// onRecord, when set, is handed the key length of every record of a
	// complete or cut uncompressed batch, or of a complete compressed one,
	// as soon as the record's first bytes have passed (recordkeys.go).
	onRecord func(recordKey)

	buf  [maxTopicNameLen]byte
	got  int   // bytes of buf gathered
	need int   // bytes to gather before step runs
	skip int64 // bytes to drop before gathering
	step func(s *fetchScanner, b []byte)
	done bool

	topics      int32 // topics left, the current one included
	partitions  int32 // partitions of the current topic left, the current one included
	topic       string
	keepTopic   bool
	partition   int32
	recordsLeft int64 // bytes of the current partition's records not yet consumed

	walk recordWalk // the records of the current batch (recordkeys.go)
}

// newFetchScanner returns a scanner of a Fetch response of version, or nil
// for a version it does not read.
func newFetchScanner(version int16, onBatch func(batchHeader)) *fetchScanner {
	if version < 0 || version > maxScannedFetchVersion {
		return nil
	}
	s := &fetchScanner{version: version, onBatch: onBatch}
	n := 4 // topics count
	if version >= 1 {
		n += 4 // throttle_time_ms
	}
	if version >= 7 {
		n += 2 + 4 // error_code, session_id
	}
	s.gather(n, (*fetchScanner).topicsCount)
	return s
}

func (s *fetchScanner) gather(n int, step func(s *fetchScanner, b []byte)) {
	s.need, s.got, s.step = n, 0, step
}

func (s *fetchScanner) stop() { s.done, s.step, s.need, s.skip = true, nil, 0, 0 }

// feed consumes the next bytes of the response body.
func (s *fetchScanner) feed(p []byte) {
	for len(p) > 0 && !s.done {
		if s.skip > 0 {
			n := min(int64(len(p)), s.skip)
			s.skip -= n
			p = p[n:]
			if s.skip > 0 {
				return
			}
		}
		if s.walk.collect > 0 {
			n := min(int64(len(p)), s.walk.collect)
			s.walk.packed = append(s.walk.packed, p[:n]...)
			s.walk.collect -= n
			p = p[n:]
			if s.walk.collect > 0 {
				return
			}
		}
		if s.need > 0 {
			n := copy(s.buf[s.got:s.need], p)
			s.got += n
			p = p[n:]
			if s.got < s.need {
				return
			}
		}
		step := s.step
		b := s.buf[:s.need]
		step(s, b)
	}
}

func be32(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

func (s *fetchScanner) topicsCount(b []byte) {
	s.topics = be32(b[len(b)-4:])
	s.nextTopic()
}

func (s *fetchScanner) nextTopic() {
	if s.topics <= 0 {
		s.stop()
		return
	}
	s.topics--
	s.gather(2, (*fetchScanner).topicNameLen)
}

func (s *fetchScanner) topicNameLen(b []byte) {
	n := int16(binary.BigEndian.Uint16(b))
	switch {
	case n < 0:
		s.stop()
	case n == 0:
		s.topic, s.keepTopic = "", true
		s.gather(4, (*fetchScanner).partitionsCount)
	case int(n) > maxTopicNameLen:
		s.topic, s.keepTopic = "", false
		s.skip = int64(n)
		s.gather(4, (*fetchScanner).partitionsCount)
	default:
		s.gather(int(n), (*fetchScanner).topicName)
	}
}

func (s *fetchScanner) topicName(b []byte) {
	s.topic, s.keepTopic = string(b), true
	s.gather(4, (*fetchScanner).partitionsCount)
}

func (s *fetchScanner) partitionsCount(b []byte) {
	s.partitions = be32(b)
	s.nextPartition()
}

func (s *fetchScanner) nextPartition() {
	if s.partitions <= 0 {
		s.nextTopic()
		return
	}
	s.partitions--
	n := 4 + 2 + 8 // partition_index, error_code, high_watermark
	if s.version >= 4 {
		n += 8 // last_stable_offset
	}
	if s.version >= 5 {
		n += 8 // log_start_offset
	}
	if s.version >= 4 {
		n += 4 // aborted_transactions count
	} else {
		n += 4 // records length
	}
	s.gather(n, (*fetchScanner).partitionHeader)
}

func (s *fetchScanner) partitionHeader(b []byte) {
	s.partition = be32(b)
	last := be32(b[len(b)-4:])
	if s.version < 4 {
		s.records(last)
		return
	}
	if last > 0 { // aborted transactions: producer_id, first_offset
		s.skip = int64(last) * 16
	}
	n := 4 // records length
	if s.version >= 11 {
		n += 4 // preferred_read_replica
	}
	s.gather(n, (*fetchScanner).recordsLen)
}

func (s *fetchScanner) recordsLen(b []byte) { s.records(be32(b[len(b)-4:])) }

// records starts the partition's records of length n (-1 is null).
func (s *fetchScanner) records(n int32) {
	s.recordsLeft = max(int64(n), 0)
	s.nextBatch()
}

func (s *fetchScanner) nextBatch() {
	switch {
	case s.recordsLeft == 0:
		s.nextPartition()
	case s.recordsLeft < batchPrefixLen:
		// The tail of a fetch may cut a batch anywhere: nothing to read.
		s.skip, s.recordsLeft = s.recordsLeft, 0
		s.gather(0, func(s *fetchScanner, _ []byte) { s.nextPartition() })
	default:
		s.recordsLeft -= batchPrefixLen
		s.gather(batchPrefixLen, (*fetchScanner).batchPrefix)
	}
}

func (s *fetchScanner) batchPrefix(b []byte) {
	length := int64(be32(b[8:]))
	if length < 0 {
		// Not a batch; the rest of this partition's records cannot be read.
		s.skip, s.recordsLeft = s.recordsLeft, 0
		s.gather(0, func(s *fetchScanner, _ []byte) { s.nextPartition() })
		return
	}
	avail := min(length, s.recordsLeft)
	if avail < batchHeaderLen-batchPrefixLen {
		// A header cut by the end of the fetch (or too short to be one).
		s.skip = avail
		s.recordsLeft -= avail
		s.gather(0, func(s *fetchScanner, _ []byte) { s.nextBatch() })
		return
	}
	rest := avail - (batchHeaderLen - batchPrefixLen) // after the header
	s.recordsLeft -= avail
	s.got = batchPrefixLen // keep the prefix: the header is parsed whole
	s.need = batchHeaderLen
	whole := avail == length
	s.step = func(s *fetchScanner, b []byte) {
		if h, err := batchHeaderOf(b); err == nil && s.keepTopic {
			h.Topic, h.Partition = s.topic, s.partition
			if s.onBatch != nil {
				s.onBatch(h)
			}
			if s.onRecord != nil {
				s.walkBatch(h.BaseOffset, int16(binary.BigEndian.Uint16(b[21:])), rest, whole)
				return
			}
		}
		s.skip = rest
		s.gather(0, func(s *fetchScanner, _ []byte) { s.nextBatch() })
	}
}
