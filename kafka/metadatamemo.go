package kafka

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"

	"github.com/babelqueue/babelqueue-go/core/driver"
)

// metadataMemoTTL is how long a topic's metadata answer is served again
// to the transport's writers before it is asked of kafka-go's Transport
// (whose own cache it adds at most this much staleness to).
const metadataMemoTTL = 100 * time.Millisecond

// metadataMemo is the RoundTripper of the transport's own kafka-go
// Writers. A Writer asks for its topic's metadata once per record it
// writes, to count the partitions; kafka-go's Transport answers from its
// cache, but copies the answer every time (four allocations per record).
// The memo keeps the last successful single-topic answer for
// metadataMemoTTL and hands that read-only answer out instead; the Writer
// only reads it. Every other request, an answer with an error, and a
// topic not seen last go to next unchanged.
type metadataMemo struct {
	next  kafkago.RoundTripper
	clock driver.Clock
	last  atomic.Pointer[memoEntry]
}

// memoEntry is one memoized answer: the metadata of topic, good until
// expires.
type memoEntry struct {
	topic   string
	resp    *metadataAPI.Response
	expires time.Time
}

func newMetadataMemo(next kafkago.RoundTripper, clock driver.Clock) *metadataMemo {
	return &metadataMemo{next: next, clock: clock}
}

// RoundTrip serves a fresh memoized answer to a metadata request for the
// topic last answered, and passes everything else to next, memoizing a
// successful answer for one topic.
func (m *metadataMemo) RoundTrip(ctx context.Context, addr net.Addr, req kafkago.Request) (kafkago.Response, error) {
	r, ok := req.(*metadataAPI.Request)
	if !ok || len(r.TopicNames) != 1 {
		return m.next.RoundTrip(ctx, addr, req)
	}
	topic := r.TopicNames[0]
	if e := m.last.Load(); e != nil && e.topic == topic && m.clock.Now().Before(e.expires) {
		return e.resp, nil
	}
	res, err := m.next.RoundTrip(ctx, addr, req)
	if err != nil {
		return res, err
	}
	if resp, ok := res.(*metadataAPI.Response); ok && answered(resp, topic) {
		m.last.Store(&memoEntry{topic: topic, resp: resp, expires: m.clock.Now().Add(metadataMemoTTL)})
	}
	return res, nil
}

// partitions returns how many partitions the last answer memoized gave
// topic, however old (an estimate for sizing, never for placing a record);
// 0 when the memo holds no answer for topic.
func (m *metadataMemo) partitions(topic string) int {
	if e := m.last.Load(); e != nil && e.topic == topic {
		return len(e.resp.Topics[0].Partitions)
	}
	return 0
}

// answered reports whether resp holds topic alone, without an error and
// with partitions: an answer that stays true until the topic changes.
func answered(resp *metadataAPI.Response, topic string) bool {
	return len(resp.Topics) == 1 && resp.Topics[0].Name == topic && resp.Topics[0].ErrorCode == 0 &&
		len(resp.Topics[0].Partitions) > 0
}
