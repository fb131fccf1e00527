package pulsar

import (
	"testing"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// takeFrom hands out one partition's prepared deliveries in their order,
// ahead of the other partitions' held before them, looking through the
// ready batches too; the rest keep their order for take.
func TestPrefetchTakeFromOnePartitionKeepsEachPartitionsOrder(t *testing.T) {
	p := startPrefetch("q", "g", nil, nil)
	p.running.Store(true) // prefetching mode, with no goroutine
	msg := func(part int32, n int) *babelqueue.ReceivedMessage {
		return &babelqueue.ReceivedMessage{Partition: part, Offset: int64(n)}
	}
	p.ready <- []*babelqueue.ReceivedMessage{msg(0, 0), msg(0, 1), msg(1, 0)}
	p.ready <- []*babelqueue.ReceivedMessage{msg(0, 2), msg(1, 1)}
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
	direct.ready <- []*babelqueue.ReceivedMessage{msg(1, 0)}
	if m, ok := direct.takeFrom(1); ok {
		t.Fatalf("takeFrom in direct mode = %v; want nothing", m)
	}
}
