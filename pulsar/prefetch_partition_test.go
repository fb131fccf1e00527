package pulsar

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// takeFrom hands out one partition's prepared deliveries in their order,
// ahead of the other partitions' held before them; the rest keep their
// order for take.
func TestPrefetchTakeFromOnePartitionKeepsEachPartitionsOrder(t *testing.T) {
	p := startPrefetch("q", "g", nil, nil)
	p.running.Store(true) // prefetching mode, with no goroutine
	msg := func(part int32, n int) *babelqueue.ReceivedMessage {
		return &babelqueue.ReceivedMessage{Partition: part, Offset: int64(n)}
	}
	for _, b := range [][]*babelqueue.ReceivedMessage{{msg(0, 0), msg(0, 1), msg(1, 0)}, {msg(0, 2), msg(1, 1)}} {
		p.file(p.feed[0], b)
	}
	if m, ok := p.take(); !ok || m.Partition != 0 || m.Offset != 0 {
		t.Fatalf("take = %v, %v; want 0@0", m, ok)
	}
	for _, want := range []int64{0, 1} {
		m, ok := p.takeFrom(1)
		if !ok || m.Partition != 1 || m.Offset != want {
			t.Fatalf("takeFrom(1) = %v, %v; want 1@%d", m, ok, want)
		}
	}
	if m, ok := p.takeFrom(1); ok {
		t.Fatalf("takeFrom(1) with none held = %v", m)
	}
	if m, ok := p.takeFrom(2); ok {
		t.Fatalf("takeFrom(2) of an absent partition = %v", m)
	}
	for _, want := range []int64{1, 2} {
		if m, ok := p.take(); !ok || m.Partition != 0 || m.Offset != want {
			t.Fatalf("take = %v, %v; want 0@%d", m, ok, want)
		}
	}
	direct := startPrefetch("q", "g", nil, nil)
	b := []*babelqueue.ReceivedMessage{msg(1, 0)}
	direct.file(direct.feed[0], b)
	if m, ok := direct.takeFrom(1); ok {
		t.Fatalf("takeFrom in direct mode = %v; want nothing", m)
	}
}

// The client's channel may begin with a long run of one partition's
// messages: once prefetching, Pop and ReceiveReady hand out across the
// partitions in turn (a partition not handed out yet first), and each
// partition keeps its order, so that
// an App with a lane per partition starts every lane at once instead of
// filling its pending bound with the first partition.
func TestPrefetchHandsOutAcrossPartitionsInTurn(t *testing.T) {
	const run = 40 // messages of partition 0 ahead of the others
	cc := &chanConsumer{
		fakeConsumer: &fakeConsumer{ch: make(chan pulsar.Message, 1), done: make(chan struct{})},
		cm:           make(chan pulsar.ConsumerMessage, 64),
	}
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = pulsar.Failover, true
	cfg.maxAttempts = 1 // no retry producer needed
	tr := newTransport(cfg, chanClient{fakeClient: newFakeClient(), c: cc}, false, nil, nil)
	defer tr.Close()
	msg := func(part int32, n int) pulsar.ConsumerMessage {
		return pulsar.ConsumerMessage{Message: &fakeMessage{
			payload: []byte(envelope), id: pulsar.NewMessageID(1, int64(n), -1, part)}}
	}
	cc.cm <- msg(0, 0)
	ctx := context.Background()
	if m, err := tr.Pop(ctx, "q", time.Second); err != nil || m == nil || m.Partition != 0 {
		t.Fatalf("first Pop = %v, %v", m, err)
	}
	for n := 1; n <= run; n++ {
		cc.cm <- msg(0, n)
	}
	for n := range 2 {
		for part := int32(1); part < 6; part++ {
			cc.cm <- msg(part, n)
		}
	}
	// 50 messages, all filed: the first run comes while partition 0 is
	// the only one seen.
	if !tr.NotifyReady("q", func() {}) {
		t.Fatal("NotifyReady = false")
	}
	pre := tr.consumers["q"].pre
	deadline := time.Now().Add(5 * time.Second)
	for len(cc.cm) > 0 || pre.held() < run+10 {
		if time.Now().After(deadline) {
			t.Fatalf("prefetcher left %d in the channel, %d held", len(cc.cm), pre.held())
		}
		time.Sleep(time.Millisecond)
	}
	type at struct {
		part int32
		n    int64
	}
	var want []at
	want = append(want, at{0, 1})
	for part := int32(1); part < 6; part++ {
		want = append(want, at{part, 0})
	}
	want = append(want, at{0, 2})
	for part := int32(1); part < 6; part++ {
		want = append(want, at{part, 1})
	}
	for n := int64(3); n <= run; n++ {
		want = append(want, at{0, n})
	}
	for i, w := range want {
		var m *babelqueue.ReceivedMessage
		if i%2 == 0 {
			m, _ = tr.ReceiveReady("q")
		} else {
			m, _ = tr.Pop(ctx, "q", time.Second)
		}
		if m == nil {
			t.Fatalf("hand-out %d = nothing; want partition %d entry %d", i, w.part, w.n)
		}
		if got := (at{m.Partition, Message(m).ID().EntryID()}); got != w {
			t.Fatalf("hand-out %d = partition %d entry %d; want partition %d entry %d", i, got.part, got.n, w.part, w.n)
		}
	}
	if m, ok := tr.ReceiveReady("q"); ok {
		t.Fatalf("ReceiveReady after every message = %v", m)
	}
}
