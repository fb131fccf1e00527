package kafka

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
	produceAPI "github.com/segmentio/kafka-go/protocol/produce"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// countingTripper answers metadata requests with partitions partitions
// (or err), and counts the requests it was asked.
type countingTripper struct {
	calls      int
	partitions int
	code       int16
	err        error
}

func (c *countingTripper) RoundTrip(_ context.Context, _ net.Addr, req kafkago.Request) (kafkago.Response, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	m, ok := req.(*metadataAPI.Request)
	if !ok {
		return &produceAPI.Response{}, nil
	}
	resp := &metadataAPI.Response{}
	for _, name := range m.TopicNames {
		resp.Topics = append(resp.Topics, metadataAPI.ResponseTopic{Name: name, ErrorCode: c.code,
			Partitions: make([]metadataAPI.ResponsePartition, c.partitions)})
	}
	return resp, nil
}

func partitionsOf(t *testing.T, m *metadataMemo, topic string) int {
	t.Helper()
	res, err := m.RoundTrip(context.Background(), nil, &metadataAPI.Request{TopicNames: []string{topic}})
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	for _, tp := range res.(*metadataAPI.Response).Topics {
		if tp.Name == topic {
			return len(tp.Partitions)
		}
	}
	t.Fatalf("metadata of %s: topic missing from %+v", topic, res)
	return 0
}

func TestMetadataMemoServesLastTopicUntilTTL(t *testing.T) {
	next := &countingTripper{partitions: 3}
	clock := bqtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := newMetadataMemo(next, clock)
	for range 5 {
		if n := partitionsOf(t, m, "orders"); n != 3 {
			t.Fatalf("partitions %d; want 3", n)
		}
	}
	if next.calls != 1 {
		t.Fatalf("next asked %d times within the TTL; want 1", next.calls)
	}
	next.partitions = 6
	clock.Advance(metadataMemoTTL)
	if n := partitionsOf(t, m, "orders"); n != 6 || next.calls != 2 {
		t.Fatalf("after the TTL: partitions %d, next asked %d times; want 6 and 2", n, next.calls)
	}
	if n := partitionsOf(t, m, "payments"); n != 6 || next.calls != 3 {
		t.Fatalf("another topic: partitions %d, next asked %d times; want 6 and 3", n, next.calls)
	}
}

func TestMetadataMemoPassesTheRestThrough(t *testing.T) {
	next := &countingTripper{partitions: 3, code: int16(kafkago.UnknownTopicOrPartition)}
	m := newMetadataMemo(next, bqtest.NewFakeClock(time.Unix(1_700_000_000, 0)))
	ctx := context.Background()
	for range 2 {
		if _, err := m.RoundTrip(ctx, nil, &metadataAPI.Request{TopicNames: []string{"missing"}}); err != nil {
			t.Fatal(err)
		}
	}
	if next.calls != 2 {
		t.Fatalf("an answer with an error was memoized: next asked %d times; want 2", next.calls)
	}
	next.code = 0
	for range 2 {
		if _, err := m.RoundTrip(ctx, nil, &metadataAPI.Request{TopicNames: []string{"a", "b"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.RoundTrip(ctx, nil, &produceAPI.Request{}); err != nil {
			t.Fatal(err)
		}
	}
	if next.calls != 6 {
		t.Fatalf("multi-topic metadata or produce requests memoized: next asked %d times; want 6", next.calls)
	}
	boom := errors.New("boom")
	next.err = boom
	if _, err := m.RoundTrip(ctx, nil, &metadataAPI.Request{TopicNames: []string{"c"}}); !errors.Is(err, boom) {
		t.Fatalf("error %v; want %v", err, boom)
	}
	next.err = nil
	partitionsOf(t, m, "c")
	if next.calls != 8 {
		t.Fatalf("a failed request was memoized: next asked %d times; want 8", next.calls)
	}
}
