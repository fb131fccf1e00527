package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// popAll pops n records of orders and returns them by "<partition>@<offset>".
func popAll(t *testing.T, rg *rig, n int) map[string]*babelqueue.ReceivedMessage {
	t.Helper()
	out := make(map[string]*babelqueue.ReceivedMessage, n)
	for range n {
		m, err := rg.tr.Receive(context.Background(), "orders", time.Second)
		if err != nil || m == nil {
			t.Fatalf("Receive = %v, %v", m, err)
		}
		d, _ := recordOf(m)
		out[fmt.Sprintf("%d@%d", d.msg.Partition, d.msg.Offset)] = m
	}
	return out
}

// commitsOf returns the commits the fake group readers received, as
// "<partition>@<offset>".
func commitsOf(rg *rig) []string {
	var out []string
	for _, r := range rg.readers {
		r.mu.Lock()
		for _, m := range r.commits {
			out = append(out, fmt.Sprintf("%d@%d", m.Partition, m.Offset))
		}
		r.mu.Unlock()
	}
	return out
}

func appendRecords(t *testing.T, rg *rig, partition, n int) {
	t.Helper()
	for range n {
		rg.log.append("orders", partition, kafkago.Message{Value: []byte(envelope(t, 0))})
	}
}

func TestOutOfOrderAcksCommitOnlyTheSettledPrefixOfEachPartition(t *testing.T) {
	rg := newRig(t) // commits reach the fake group reader synchronously
	ctx := context.Background()
	appendRecords(t, rg, 0, 3)
	appendRecords(t, rg, 1, 2)
	got := popAll(t, rg, 5)
	committed := func(p int) int64 { return rg.offsets.get("orders", p) }
	steps := []struct {
		ack    string
		p0, p1 int64 // the committed next offsets after the ack
	}{
		{"0@2", 0, 0}, // held back by 0@0 and 0@1
		{"1@1", 0, 0}, // held back by 1@0
		{"0@0", 1, 0}, // 0@1 still holds 0@2 back
		{"1@0", 1, 2}, // the whole of partition 1
		{"0@1", 3, 2}, // the prefix now reaches 0@2
	}
	for _, s := range steps {
		if err := rg.tr.Ack(ctx, got[s.ack]); err != nil {
			t.Fatalf("Ack %s: %v", s.ack, err)
		}
		if committed(0) != s.p0 || committed(1) != s.p1 {
			t.Fatalf("after Ack %s: committed p0=%d p1=%d, want %d %d", s.ack, committed(0), committed(1), s.p0, s.p1)
		}
	}
	// One commit per advance of a prefix, each the end of the prefix.
	if diff := cmp.Diff([]string{"0@0", "1@1", "0@2"}, commitsOf(rg)); diff != "" {
		t.Fatalf("commits (-want +got):\n%s", diff)
	}
	if err := rg.tr.Ack(ctx, got["0@1"]); err == nil || !strings.Contains(err.Error(), "already settled") {
		t.Fatalf("second Ack of 0@1 = %v, want an error", err)
	}
}

func TestHandBackInTheMiddleIsNeverPassed(t *testing.T) {
	for name, mk := range map[string]func(*testing.T) *rig{
		"plain":    func(t *testing.T) *rig { return newRig(t) },
		"batching": memberRig, // commits go through the commit batcher
	} {
		t.Run(name, func(t *testing.T) {
			rg := mk(t)
			ctx := context.Background()
			appendRecords(t, rg, 0, 4)
			got := popAll(t, rg, 4)
			if err := rg.tr.Ack(ctx, got["0@0"]); err != nil {
				t.Fatal(err)
			}
			// 0@2 is acknowledged before 0@1 is handed back: its Ack
			// succeeds, but nothing may commit it past 0@1.
			if err := rg.tr.Ack(ctx, got["0@2"]); err != nil {
				t.Fatal(err)
			}
			if err := rg.tr.HandBack(ctx, got["0@1"]); err != nil {
				t.Fatal(err)
			}
			bqtest.WaitUntil(t, 5*time.Second, "the settled prefix to be committed", func() bool { return rg.offsets.get("orders", 0) == 1 })
			// 0@3 comes after the hand-back: it cannot be committed.
			err := rg.tr.Ack(ctx, got["0@3"])
			if !errors.Is(err, io.ErrClosedPipe) || !strings.Contains(err.Error(), "delivered again") {
				t.Fatalf("Ack after the hand-back = %v", err)
			}
			if c := rg.offsets.get("orders", 0); c != 1 {
				t.Fatalf("the committed next offset moved to %d", c)
			}
			// The next reader starts at the handed-back record; every record
			// after it comes again, and is committed once settled.
			again := popAll(t, rg, 3)
			for _, k := range []string{"0@1", "0@2", "0@3"} {
				if again[k] == nil {
					t.Fatalf("%s was not delivered again: %v", k, again)
				}
			}
			for _, k := range []string{"0@3", "0@1", "0@2"} {
				if err := rg.tr.Ack(ctx, again[k]); err != nil {
					t.Fatalf("Ack %s: %v", k, err)
				}
			}
			bqtest.WaitUntil(t, 5*time.Second, "the settled partition to be committed", func() bool { return rg.offsets.get("orders", 0) == 4 })
		})
	}
}

// TestBatchedCommitsWaitForTheSlowDelivery checks that an acknowledgement
// held back by an earlier delivery never reaches the commit batcher.
func TestBatchedCommitsWaitForTheSlowDelivery(t *testing.T) {
	mr := newMemberRig(t)
	rg := mr.rig
	ctx := context.Background()
	appendRecords(t, rg, 0, 3)
	got := popAll(t, rg, 3)
	for _, k := range []string{"0@1", "0@2"} {
		if err := rg.tr.Ack(ctx, got[k]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // ten times the batcher's hand-over delay
	if c := rg.offsets.get("orders", 0); c != 0 {
		t.Fatalf("committed next offset %d while 0@0 is unsettled", c)
	}
	if err := rg.tr.Ack(ctx, got["0@0"]); err != nil {
		t.Fatal(err)
	}
	bqtest.WaitUntil(t, 5*time.Second, "the prefix to be committed", func() bool { return rg.offsets.get("orders", 0) == 3 })
	mr.gen.mu.Lock()
	defer mr.gen.mu.Unlock()
	if diff := cmp.Diff([]map[string]map[int]int64{{"orders": {0: 3}}}, mr.gen.commitLog); diff != "" {
		t.Fatalf("commits reaching the group reader (-want +got):\n%s", diff)
	}
}

// TestConcurrentAcksCommitMonotonically acknowledges, from several
// goroutines and in a random order, records of three partitions, and
// checks that each partition's commits only move forward and end at its
// last record.
func TestConcurrentAcksCommitMonotonically(t *testing.T) {
	rg := newRig(t)
	ctx := context.Background()
	const perPartition = 100
	for p := range 3 {
		appendRecords(t, rg, p, perPartition)
	}
	got := popAll(t, rg, 3*perPartition)
	msgs := make([]*babelqueue.ReceivedMessage, 0, len(got))
	for _, m := range got {
		msgs = append(msgs, m)
	}
	rand.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	var wg sync.WaitGroup
	errs := make(chan error, len(msgs))
	const workers = 8
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(msgs); i += workers {
				if err := rg.tr.Ack(ctx, msgs[i]); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	last := map[int]int64{}
	for _, r := range rg.readers {
		r.mu.Lock()
		for _, m := range r.commits {
			if prev, ok := last[m.Partition]; ok && m.Offset <= prev {
				t.Errorf("partition %d committed %d after %d", m.Partition, m.Offset, prev)
			}
			last[m.Partition] = m.Offset
		}
		r.mu.Unlock()
	}
	for p := range 3 {
		if c := rg.offsets.get("orders", p); c != perPartition {
			t.Errorf("partition %d: committed next offset %d, want %d", p, c, perPartition)
		}
	}
}

// TestLedgerKeepsAReplayedPartitionInOrder hands out a partition read again
// from its committed offset (as after a rebalance): the earlier copies and
// the new ones all hold the commit back until settled.
func TestLedgerKeepsAReplayedPartitionInOrder(t *testing.T) {
	r := newFakeReader(newFakeLog(), newFakeOffsets(), "orders")
	c := newConsumer("orders", r)
	rec := func(off int64) *delivery {
		d := &delivery{msg: kafkago.Message{Topic: "orders", Partition: 0, Offset: off}}
		c.handOut(d)
		return d
	}
	first5, first6 := rec(5), rec(6)
	again5, again6 := rec(5), rec(6)
	if diff := cmp.Diff([]int64{5, 5, 6, 6}, c.pending("orders", 0)); diff != "" {
		t.Fatalf("pending (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	for _, d := range []*delivery{first6, again6, first5} {
		if err := c.ack(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(r.commits); n != 0 {
		t.Fatalf("%d commits while a copy of offset 5 is unsettled", n)
	}
	if err := c.ack(ctx, again5); err != nil {
		t.Fatal(err)
	}
	if len(r.commits) != 1 || r.commits[0].Offset != 6 {
		t.Fatalf("commits %+v, want offset 6 once", r.commits)
	}
	if p := c.pending("orders", 0); len(p) != 0 {
		t.Fatalf("pending %v after every copy was settled", p)
	}
}

// pending reports the offsets of a partition handed out and not yet
// settled.
func (c *consumer) pending(topic string, partition int) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[partitionKey{topic, partition}]
	if p == nil {
		return nil
	}
	out := make([]int64, 0, len(p.out))
	for _, e := range p.out {
		if !e.settled {
			out = append(out, e.offset)
		}
	}
	return out
}

// TestConcurrentReceiveAndAck consumes one queue from several goroutines
// through the read-ahead and the commit batcher: every record is handed out
// once, and the partitions end committed at their last record.
func TestConcurrentReceiveAndAck(t *testing.T) {
	rg := memberRig(t)
	ctx := context.Background()
	const perPartition = 200
	for p := range 3 {
		appendRecords(t, rg, p, perPartition)
	}
	seen := receiveAndAckAll(t, ctx, rg.tr, 4, 50*time.Millisecond, nil)
	if len(seen) != 3*perPartition {
		t.Fatalf("%d distinct records handed out, want %d", len(seen), 3*perPartition)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s handed out %d times", k, n)
		}
	}
	for p := range 3 {
		bqtest.WaitUntil(t, 5*time.Second, fmt.Sprintf("partition %d to be committed", p), func() bool { return rg.offsets.get("orders", p) == perPartition })
	}
}

// receiveAndAckAll drains "orders" of tr from workers goroutines, each
// receiving with wait and acknowledging what it got (after pause, when not
// nil), until a Receive returns nothing. It returns how many times each
// partition@offset was handed out; a Receive or Ack error fails the test.
func receiveAndAckAll(t *testing.T, ctx context.Context, tr *Transport, workers int, wait time.Duration, pause func()) map[string]int {
	t.Helper()
	var mu sync.Mutex
	seen := make(map[string]int)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := tr.Receive(ctx, "orders", wait)
				if err != nil {
					errs <- err
					return
				}
				if m == nil {
					return // the queue is drained
				}
				d, _ := recordOf(m)
				mu.Lock()
				seen[fmt.Sprintf("%d@%d", d.msg.Partition, d.msg.Offset)]++
				mu.Unlock()
				if pause != nil {
					pause()
				}
				if err := tr.Ack(ctx, m); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return seen
}
