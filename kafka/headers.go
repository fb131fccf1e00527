package kafka

import (
	"sort"
	"strconv"
	"time"
	"unsafe"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

// toKafkaHeaders converts headers to record headers with UTF-8 byte values.
func toKafkaHeaders(hs []wire.Header) []kafkago.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]kafkago.Header, len(hs))
	for i, h := range hs {
		out[i] = kafkago.Header{Key: h.Key, Value: stringBytes(h.Value)}
	}
	return out
}

// headerMap returns the headers of a record as a map; when a key repeats,
// the last value wins, as for a Java consumer's lastHeader. The values are
// read-only views of the record's header bytes (see bytesView).
func headerMap(hs []kafkago.Header) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Key] = bytesView(h.Value)
	}
	return m
}

// bytesView returns b as a string without copying it. The caller
// guarantees that b is never written again: it is the key, value or a
// header value of a record a Reader handed over, which the Reader allocated
// for that record alone and does not touch afterwards.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// lastHeader returns the last value of key among hs, as a read-only view
// of its bytes (see bytesView): hs are the headers of a record a Reader
// handed over, or headers viewing strings.
func lastHeader(hs []kafkago.Header, key string) (string, bool) {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == key {
			return bytesView(hs[i].Value), true
		}
	}
	return "", false
}

// headerSet is an ordered header list in which each key appears once.
type headerSet []wire.Header

func (s headerSet) index(key string) int {
	for i, h := range s {
		if h.Key == key {
			return i
		}
	}
	return -1
}

// set replaces the value of key, or appends it.
func (s *headerSet) set(key, value string) {
	if i := s.index(key); i >= 0 {
		(*s)[i].Value = value
		return
	}
	*s = append(*s, wire.Header{Key: key, Value: value})
}

// setIfAbsent appends key unless it is already there.
func (s *headerSet) setIfAbsent(key, value string) {
	if s.index(key) < 0 {
		*s = append(*s, wire.Header{Key: key, Value: value})
	}
}

// tierHeaders are the retry-tier routing headers that only the transport
// sets; a caller's extra header of that name is ignored.
func isTierHeader(key string) bool {
	return key == wire.HeaderDelay || key == wire.HeaderOriginalTopic
}

// projection returns the CONTRACT.md 6 contract headers of body (in the contract
// order) and the record timestamp: meta.created_at, or now when the body
// has none.
func projection(body string, now time.Time) (headerSet, time.Time) {
	p := wire.ProjectBody(stringBytes(body))
	ts := now
	if p.HasCreatedAt {
		ts = time.UnixMilli(p.CreatedAt)
	}
	return headerSet(p.Headers()), ts
}

// withExtra appends the caller's out-of-band headers in key order: blank
// keys and values are skipped, a key already present (a contract header)
// wins, and the transport's tier headers are never taken from a caller.
func withExtra(s headerSet, extra map[string]string) headerSet {
	if len(extra) == 0 {
		return s
	}
	keys := make([]string, 0, len(extra))
	for k, v := range extra {
		if wire.IsBlank(k) || wire.IsBlank(v) || isTierHeader(k) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.setIfAbsent(k, extra[k])
	}
	return s
}

// keepRouting carries the delivered record's bq-job when the body projects
// none (a poison body), so the routing header survives a republish.
func keepRouting(s headerSet, from []kafkago.Header) headerSet {
	if v, ok := lastHeader(from, wire.HeaderJob); ok && !wire.IsBlank(v) {
		s.setIfAbsent(wire.HeaderJob, v)
	}
	return s
}

func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
