//go:build integration

package kafkashare

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/babelqueue/babelqueue-go/brokertest"
)

var topicSeq atomic.Int64

// newTopic creates a fresh topic with parts partitions and returns its name.
func newTopic(t testing.TB, parts int32) string {
	t.Helper()
	name := fmt.Sprintf("share-%s-%d-%d", sanitize(t.Name()), time.Now().UnixNano()%1e9, topicSeq.Add(1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokertest.KafkaBrokers(t)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, n := range []string{name, name + ".dlq"} {
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = n, parts, 1
		req.Topics = append(req.Topics, tp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	for _, tp := range resp.Topics {
		if tp.ErrorCode != 0 {
			t.Fatalf("create topic %s: error code %d", tp.Topic, tp.ErrorCode)
		}
	}
	return name
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}

// newTransport returns a transport in a fresh share group, closed at the
// end of the test.
func newTransport(t testing.TB, opts ...Option) *Transport {
	t.Helper()
	all := append([]Option{
		WithBrokers(brokertest.KafkaBrokers(t)...),
		WithShareGroup(fmt.Sprintf("sg-%s-%d", sanitize(t.Name()), time.Now().UnixNano())),
	}, opts...)
	tr, err := New(all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// readAll reads every record of topic (all partitions, from the start)
// until want were read or the timeout passed.
func readAll(t testing.TB, topic string, want int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokertest.KafkaBrokers(t)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}
