package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// readyKey names a delivery by partition and offset.
func readyKey(m *babelqueue.ReceivedMessage) string {
	return fmt.Sprintf("%d@%d", m.Partition, m.Offset)
}

func TestReceiveReadyNeverJoinsTheGroup(t *testing.T) {
	mr := newMemberRig(t)
	if m, ok := mr.tr.ReceiveReady("orders"); ok || m != nil {
		t.Fatalf("ReceiveReady before any Receive = %v, %v; want nothing", m, ok)
	}
	mr.tr.mu.Lock()
	n := len(mr.tr.readers)
	mr.tr.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d readers opened by ReceiveReady; want none", n)
	}
}

// ReceiveReady and Receive take from one sequence: each record once, each
// partition in offset order, and the settled prefixes are committed.
func TestReceiveReadyTakesFromReceiveSequence(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(0))
	ctx := context.Background()
	const per = 10
	for p := range 3 {
		appendRecords(t, mr.rig, p, per)
	}
	first, err := mr.tr.Receive(ctx, "orders", time.Second)
	if err != nil || first == nil {
		t.Fatalf("Receive = %v, %v", first, err)
	}
	bqtest.WaitUntil(t, 5*time.Second, "every record buffered", func() bool { return mr.buffered() == 3*per-1 })
	got := []*babelqueue.ReceivedMessage{first}
	for i := 1; i < 3*per; i++ {
		var m *babelqueue.ReceivedMessage
		if i%2 == 0 {
			if m, err = mr.tr.Receive(ctx, "orders", time.Second); err != nil || m == nil {
				t.Fatalf("Receive %d = %v, %v", i, m, err)
			}
		} else {
			var ok bool
			if m, ok = mr.tr.ReceiveReady("orders"); !ok || m == nil {
				t.Fatalf("ReceiveReady %d with records buffered = %v, %v", i, m, ok)
			}
		}
		got = append(got, m)
	}
	if m, ok := mr.tr.ReceiveReady("orders"); ok || m != nil {
		t.Fatalf("ReceiveReady with nothing buffered = %v, %v", m, ok)
	}
	seen := make(map[string]bool)
	next := map[int32]int64{}
	for _, m := range got {
		k := readyKey(m)
		if seen[k] {
			t.Fatalf("%s handed out twice", k)
		}
		seen[k] = true
		if m.Offset != next[m.Partition] {
			t.Fatalf("partition %d: offset %d handed out, want %d (partition order)", m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
		if m.Body == "" {
			t.Fatalf("%s handed out without its body", k)
		}
	}
	for _, m := range got {
		if err := mr.tr.Ack(ctx, m); err != nil {
			t.Fatalf("Ack %s: %v", readyKey(m), err)
		}
	}
	for p := range 3 {
		if c := mr.offsets.get("orders", p); c != per {
			t.Fatalf("partition %d committed %d, want %d", p, c, per)
		}
	}
	if r, b := mr.tr.budget.held(); r != 0 || b != 0 {
		t.Fatalf("budget holds %d records, %d bytes after every ack", r, b)
	}
}

// A revoked partition's buffered records are never handed out by
// ReceiveReady: dispatch stops the moment the revocation starts.
func TestReceiveReadyNeverHandsOutARevokedPartition(t *testing.T) {
	mr := newMemberRig(t)
	ctx := context.Background()
	held, ended := mr.revokeHoldingOne(t)
	if m, ok := mr.tr.ReceiveReady("orders"); ok || m != nil {
		t.Fatalf("ReceiveReady after the revocation started handed out %s", readyKey(m))
	}
	if err := mr.tr.Ack(ctx, held); err != nil {
		t.Fatalf("Ack within the revoke timeout: %v", err)
	}
	<-ended
	if c := mr.offsets.get("orders", 0); c != 1 {
		t.Fatalf("committed next offset %d, want 1", c)
	}
}

// A fetcher signals only a Receive that waits: one waiting when the record
// is buffered is handed it at once, and ReceiveReady takes a record buffered
// while none waits.
func TestReceiveWaitingIsHandedARecordBufferedMeanwhile(t *testing.T) {
	mr := newMemberRig(t)
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 1)
	if m, err := mr.tr.Receive(ctx, "orders", time.Second); err != nil || m == nil {
		t.Fatalf("Receive = %v, %v", m, err)
	}
	for p := range 3 {
		got := make(chan *babelqueue.ReceivedMessage, 1)
		go func() {
			m, _ := mr.tr.Receive(ctx, "orders", 5*time.Second)
			got <- m
		}()
		bqtest.WaitUntil(t, 5*time.Second, "the Receive to wait", func() bool { return mr.member().waiters.Load() == 1 })
		appendRecords(t, mr.rig, p, 1)
		select {
		case m := <-got:
			if m == nil || m.Partition != int32(p) {
				t.Fatalf("waiting Receive = %v, want the record of partition %d", m, p)
			}
		case <-time.After(time.Second):
			t.Fatal("the waiting Receive was not woken by the record buffered meanwhile")
		}
		bqtest.WaitUntil(t, 5*time.Second, "the Receive to return", func() bool { return mr.member().waiters.Load() == 0 })
	}
	appendRecords(t, mr.rig, 1, 1)
	bqtest.WaitUntil(t, 5*time.Second, "the record buffered", func() bool { return mr.buffered() == 1 })
	if m, ok := mr.tr.ReceiveReady("orders"); !ok || m == nil || m.Partition != 1 {
		t.Fatalf("ReceiveReady = %v, %v", m, ok)
	}
}

// After Close, ReceiveReady hands out nothing.
func TestReceiveReadyAfterClose(t *testing.T) {
	mr := newMemberRig(t)
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 5)
	if m, err := mr.tr.Receive(ctx, "orders", time.Second); err != nil || m == nil {
		t.Fatalf("Receive = %v, %v", m, err)
	}
	bqtest.WaitUntil(t, 5*time.Second, "records buffered ahead", func() bool { return mr.buffered() > 0 })
	if err := mr.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if m, ok := mr.tr.ReceiveReady("orders"); ok || m != nil {
		t.Fatalf("ReceiveReady after Close = %v, %v", m, ok)
	}
}
