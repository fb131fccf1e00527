package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// ReceiveReadyFrom hands out one partition's buffered records in offset
// order, out of the partitions' turn, and nothing for a partition with
// none buffered; Receive goes on with the rest in turn.
func TestReceiveReadyFromTakesOnePartitionInOrder(t *testing.T) {
	mr := newMemberRig(t)
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 3)
	appendRecords(t, mr.rig, 1, 3)
	if m, ok := mr.tr.ReceiveReadyFrom("orders", 1); ok || m != nil {
		t.Fatalf("ReceiveReadyFrom before any Receive = %v, %v; want nothing", m, ok)
	}
	first, err := mr.tr.Receive(ctx, "orders", time.Second)
	if err != nil || first == nil {
		t.Fatalf("Receive = %v, %v", first, err)
	}
	bqtest.WaitUntil(t, 5*time.Second, "every record buffered", func() bool { return mr.buffered() == 5 })
	var want int64
	if first.Partition == 1 {
		want = 1
	}
	for ; want < 3; want++ {
		m, ok := mr.tr.ReceiveReadyFrom("orders", 1)
		if !ok || m.Partition != 1 || m.Offset != want {
			t.Fatalf("ReceiveReadyFrom(1) = %v, %v; want partition 1 at offset %d", m, ok, want)
		}
	}
	if m, ok := mr.tr.ReceiveReadyFrom("orders", 1); ok || m != nil {
		t.Fatalf("ReceiveReadyFrom(1) with nothing buffered = %v, %v", m, ok)
	}
	if m, ok := mr.tr.ReceiveReadyFrom("orders", 2); ok || m != nil {
		t.Fatalf("ReceiveReadyFrom(2) of an empty partition = %v, %v", m, ok)
	}
	for i := range 5 - 3 {
		m, ok := mr.tr.ReceiveReady("orders")
		if !ok || m.Partition != 0 {
			t.Fatalf("ReceiveReady %d = %v, %v; want partition 0's next", i, m, ok)
		}
	}
}

// Partitions read at once share the record budget: no fetcher takes the
// room the others' records need, so every partition with a backlog has
// records buffered for its lane, and none more than its share.
func TestMemberPartitionsShareTheRecordBudget(t *testing.T) {
	for round := range 5 {
		mr := newMemberRig(t, WithMaxBufferedRecords(12))
		ctx := context.Background()
		for p := range 3 {
			appendRecords(t, mr.rig, p, 50)
		}
		first, err := mr.tr.Receive(ctx, "orders", time.Second)
		if err != nil || first == nil {
			t.Fatalf("Receive = %v, %v", first, err)
		}
		bqtest.WaitUntil(t, 5*time.Second, "the budget to fill", func() bool { r, _ := mr.tr.budget.held(); return r >= 10 })
		time.Sleep(3 * budgetRecheck) // each fetcher fills what it may
		m := mr.member()
		m.mu.Lock()
		var bufs [3]int
		for p, a := range m.parts {
			bufs[p] = len(a.buf)
		}
		m.mu.Unlock()
		for _, n := range bufs {
			if n == 0 || n > 4 {
				t.Fatalf("round %d: buffered per partition %v over a budget of 12 with one record in flight; want 1-4 each", round, bufs)
			}
		}
		_ = mr.tr.Close()
	}
}
