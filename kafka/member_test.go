package kafka

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// memberRig is a rig whose transport reads "orders" as a group member,
// through a fake group whose first generation holds partitions 0-2.
type memberTestRig struct {
	*rig
	group *fakeGroup
	gen   *fakeGen
}

func memberRig(t *testing.T) *rig { return newMemberRig(t).rig }

// wantCommitted fails the test unless partition of "orders" is committed
// at next (the next offset to read).
func (mr *memberTestRig) wantCommitted(t *testing.T, partition, next int) {
	t.Helper()
	if c := mr.offsets.get("orders", partition); c != int64(next) {
		t.Fatalf("partition %d: committed next offset %d, want %d", partition, c, next)
	}
}

// wantBudgetEmpty fails the test unless the read-ahead budget holds no
// record and no byte.
func (mr *memberTestRig) wantBudgetEmpty(t *testing.T) {
	t.Helper()
	if r, b := mr.tr.budget.held(); r != 0 || b != 0 {
		t.Fatalf("budget holds %d records, %d bytes", r, b)
	}
}

func newMemberRig(t *testing.T, opts ...Option) *memberTestRig {
	t.Helper()
	rg := &rig{t: t, log: newFakeLog(), offsets: newFakeOffsets()}
	rg.clock = newRig(t).clock
	rg.writer = &fakeWriter{log: rg.log}
	rg.log.create("orders", 3)
	mr := &memberTestRig{rig: rg, group: newFakeGroup()}
	mr.gen = newFakeGen(rg.log, rg.offsets, map[string][]int{"orders": {0, 1, 2}})
	mr.group.gens <- mr.gen
	base := []Option{WithWriter(rg.writer), WithClock(rg.clock), WithGroupID("g"), WithRevokeTimeout(300 * time.Millisecond),
		func(c *config) { c.memberFactory = func(string, []string) groupMember { return mr.group } }}
	tr, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	rg.tr = tr
	t.Cleanup(func() { _ = tr.Close() })
	return mr
}

func (mr *memberTestRig) member() *memberReader {
	mr.tr.mu.Lock()
	defer mr.tr.mu.Unlock()
	return mr.tr.readers["orders"].member
}

// state returns the state of the live assignment of partition p, or
// asgRetired when there is none.
func (mr *memberTestRig) state(p int) asgState {
	m := mr.member()
	m.mu.Lock()
	defer m.mu.Unlock()
	if a := m.parts[p]; a != nil {
		return a.state
	}
	return asgRetired
}

// revokeHoldingOne puts 20 records in partition 0, receives the first,
// waits until the reader buffered more ahead, and ends the generation in
// the background. It returns once the revocation started, with the
// delivery held and a channel closed when the generation has ended.
func (mr *memberTestRig) revokeHoldingOne(t *testing.T) (*driver.ReceivedMessage, chan struct{}) {
	t.Helper()
	appendRecords(t, mr.rig, 0, 20)
	held, err := mr.tr.Receive(context.Background(), "orders", time.Second)
	if err != nil || held == nil {
		t.Fatalf("Receive = %v, %v", held, err)
	}
	bqtest.WaitUntil(t, 5*time.Second, "records buffered ahead", func() bool { return mr.buffered() > 5 })
	ended := make(chan struct{})
	go func() { mr.gen.End(); close(ended) }()
	bqtest.WaitUntil(t, 5*time.Second, "the revocation to start", func() bool { return mr.state(0) != asgLive })
	return held, ended
}

func (mr *memberTestRig) buffered() int {
	m := mr.member()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buffered
}

func TestMemberRevocationStopsDispatchAndCommitsTheSettledPrefix(t *testing.T) {
	mr := newMemberRig(t)
	ctx := context.Background()
	held, ended := mr.revokeHoldingOne(t)
	if m, err := mr.tr.Receive(ctx, "orders", 50*time.Millisecond); err != nil || m != nil {
		t.Fatalf("Receive after revocation = %v, %v; want nothing handed out", m, err)
	}
	if n := mr.buffered(); n != 0 {
		t.Fatalf("%d records of the revoked partition still buffered", n)
	}
	// Within the revoke timeout, the delivery in flight still settles and
	// is committed within the ending generation.
	if err := mr.tr.Ack(ctx, held); err != nil {
		t.Fatalf("Ack within the revoke timeout: %v", err)
	}
	<-ended
	mr.wantCommitted(t, 0, 1)
	mr.wantBudgetEmpty(t)
}

func TestMemberAckAfterRevocationCommitsNothing(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(0))
	ctx := context.Background()
	appendRecords(t, mr.rig, 1, 3)
	got := popAll(t, mr.rig, 3)
	if err := mr.tr.Ack(ctx, got["1@0"]); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mr.gen.End() // 1@1 and 1@2 stay in flight past the revoke timeout
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("revocation took %v; the deliveries in flight were not given the revoke timeout", d)
	}
	for _, k := range []string{"1@2", "1@1"} {
		if err := mr.tr.Ack(ctx, got[k]); !errors.Is(err, ErrRevoked) {
			t.Fatalf("Ack %s after revocation = %v, want ErrRevoked", k, err)
		}
	}
	mr.wantCommitted(t, 1, 1)
	// The next generation (this member again) reads the rest again.
	gen2 := newFakeGen(mr.log, mr.offsets, map[string][]int{"orders": {1}})
	mr.group.gens <- gen2
	again := popAll(t, mr.rig, 2)
	if again["1@1"] == nil || again["1@2"] == nil {
		t.Fatalf("redelivered %d records, want 1@1 and 1@2", len(again))
	}
}

func TestMemberConcurrentAcksCommitMonotonically(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(time.Millisecond))
	ctx := context.Background()
	const per = 300
	for p := range 3 {
		appendRecords(t, mr.rig, p, per)
	}
	seen := receiveAndAckAll(t, ctx, mr.tr, 8, 100*time.Millisecond, func() {
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	})
	if len(seen) != 3*per {
		t.Fatalf("%d distinct records handed out, want %d", len(seen), 3*per)
	}
	for p := range 3 {
		bqtest.WaitUntil(t, 5*time.Second, "the last commit", func() bool { return mr.offsets.get("orders", p) == per })
	}
	mr.gen.mu.Lock()
	defer mr.gen.mu.Unlock()
	last := map[int]int64{}
	for _, c := range mr.gen.commitLog {
		for p, o := range c["orders"] {
			if o < last[p] {
				t.Fatalf("partition %d committed %d after %d", p, o, last[p])
			}
			last[p] = o
		}
	}
}

func TestMemberFailedCommitIsRetried(t *testing.T) {
	for _, interval := range []time.Duration{0, 5 * time.Millisecond} {
		t.Run(fmt.Sprint(interval), func(t *testing.T) {
			mr := newMemberRig(t, WithCommitInterval(interval))
			ctx := context.Background()
			appendRecords(t, mr.rig, 2, 2)
			got := popAll(t, mr.rig, 2)
			mr.gen.mu.Lock()
			mr.gen.commitErr = errors.New("coordinator moving")
			mr.gen.mu.Unlock()
			err := mr.tr.Ack(ctx, got["2@0"])
			if interval == 0 && err == nil {
				t.Fatal("Ack with a failing synchronous commit returned nil")
			}
			if interval > 0 && err != nil {
				t.Fatalf("Ack = %v", err)
			}
			time.Sleep(30 * time.Millisecond)
			if c := mr.offsets.get("orders", 2); c != 0 {
				t.Fatalf("committed %d while commits fail", c)
			}
			mr.gen.mu.Lock()
			mr.gen.commitErr = nil
			mr.gen.mu.Unlock()
			if interval > 0 {
				bqtest.WaitUntil(t, 5*time.Second, "the failed commit to be retried", func() bool { return mr.offsets.get("orders", 2) == 1 })
			}
			if err := mr.tr.Ack(ctx, got["2@1"]); err != nil {
				t.Fatal(err)
			}
			bqtest.WaitUntil(t, 5*time.Second, "the commit", func() bool { return mr.offsets.get("orders", 2) == 2 })
		})
	}
}

func TestMemberRevocationRetriesAFailedFinalCommit(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(time.Hour))
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 1)
	got := popAll(t, mr.rig, 1)
	if err := mr.tr.Ack(ctx, got["0@0"]); err != nil {
		t.Fatal(err)
	}
	mr.gen.mu.Lock()
	mr.gen.commitErr = errors.New("not coordinator")
	mr.gen.mu.Unlock()
	go func() {
		time.Sleep(250 * time.Millisecond)
		mr.gen.mu.Lock()
		mr.gen.commitErr = nil
		mr.gen.mu.Unlock()
	}()
	mr.gen.End()
	if c := mr.offsets.get("orders", 0); c != 1 {
		t.Fatalf("committed %d after the revocation, want 1", c)
	}
}

func TestMemberBufferCapsPauseFetching(t *testing.T) {
	t.Run("records", func(t *testing.T) {
		mr := newMemberRig(t, WithMaxBufferedRecords(5))
		appendRecords(t, mr.rig, 0, 50)
		checkCap(t, mr, 5)
	})
	t.Run("bytes", func(t *testing.T) {
		size := int64(len(envelope(t, 0)))
		mr := newMemberRig(t, WithMaxBufferedBytes(4*size+size/2))
		appendRecords(t, mr.rig, 0, 50)
		checkCap(t, mr, 4)
	})
}

func checkCap(t *testing.T, mr *memberTestRig, cap int) {
	t.Helper()
	ctx := context.Background()
	m, err := mr.tr.Receive(ctx, "orders", time.Second)
	if err != nil || m == nil {
		t.Fatalf("Receive = %v, %v", m, err)
	}
	bqtest.WaitUntil(t, 5*time.Second, "the budget to fill", func() bool { r, _ := mr.tr.budget.held(); return r == cap })
	time.Sleep(30 * time.Millisecond)
	// The fetcher holds at most one record more, waiting for room.
	if mr.gen.fetchedUpTo("orders", 0, int64(cap)+2) {
		t.Fatalf("fetched past the cap of %d", cap)
	}
	for range cap - 1 {
		if m, err := mr.tr.Receive(ctx, "orders", time.Second); err != nil || m == nil {
			t.Fatalf("Receive = %v, %v", m, err)
		}
	}
	if m, err := mr.tr.Receive(ctx, "orders", 30*time.Millisecond); err != nil || m != nil {
		t.Fatalf("Receive past the cap = %v, %v; want nothing while %d are in flight", m, err, cap)
	}
	if err := mr.tr.Ack(ctx, m); err != nil {
		t.Fatal(err)
	}
	bqtest.WaitUntil(t, 5*time.Second, "fetching to resume", func() bool { return mr.gen.fetchedUpTo("orders", 0, int64(cap)+1) })
	if m, err := mr.tr.Receive(ctx, "orders", time.Second); err != nil || m == nil {
		t.Fatalf("Receive after an ack = %v, %v", m, err)
	}
}

func TestMemberHandBackRereadsFromTheFirstUnsettled(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(0))
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 4)
	got := popAll(t, mr.rig, 4)
	if err := mr.tr.Ack(ctx, got["0@0"]); err != nil {
		t.Fatal(err)
	}
	if err := mr.tr.Ack(ctx, got["0@2"]); err != nil {
		t.Fatal(err)
	}
	if err := mr.tr.HandBack(ctx, got["0@1"]); err != nil {
		t.Fatal(err)
	}
	if err := mr.tr.Ack(ctx, got["0@3"]); err == nil {
		t.Fatal("Ack after a hand-back of an earlier record returned nil")
	}
	again := popAll(t, mr.rig, 3)
	for _, k := range []string{"0@1", "0@2", "0@3"} {
		if again[k] == nil {
			t.Fatalf("%s not delivered again", k)
		}
		if err := mr.tr.Ack(ctx, again[k]); err != nil {
			t.Fatal(err)
		}
	}
	if c := mr.offsets.get("orders", 0); c != 4 {
		t.Fatalf("committed %d, want 4", c)
	}
}

func TestMemberCloseSettlesInFlightThenRefuses(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(time.Hour))
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 3)
	got := popAll(t, mr.rig, 3)
	m := mr.member()
	closed := make(chan error, 1)
	go func() { closed <- mr.tr.Close() }()
	bqtest.WaitUntil(t, 5*time.Second, "Close to stop dispatch", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		a := m.parts[0]
		return a == nil || a.state != asgLive
	})
	if err := mr.tr.Ack(ctx, got["0@0"]); err != nil {
		t.Fatalf("Ack while Close waits for the deliveries in flight: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if c := mr.offsets.get("orders", 0); c != 1 {
		t.Fatalf("committed %d at Close, want 1", c)
	}
	if err := mr.tr.Ack(ctx, got["0@1"]); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ack after Close = %v, want ErrClosed", err)
	}
	if c := mr.offsets.get("orders", 0); c != 1 {
		t.Fatalf("an Ack after Close committed %d", c)
	}
}

// TestMemberDeliveriesCarryKeyAndPartition: a record read by the group
// member reaches the App with its key and partition, which order its
// concurrent handling (babelqueue.WithConcurrency).
func TestMemberDeliveriesCarryKeyAndPartition(t *testing.T) {
	mr := newMemberRig(t)
	ctx := context.Background()
	mr.log.append("orders", 2, kafkago.Message{Key: []byte("order-7"), Value: []byte(envelope(t, 0))})
	m, err := mr.tr.Receive(ctx, "orders", time.Second)
	if err != nil || m == nil {
		t.Fatalf("Receive = %v, %v", m, err)
	}
	if string(m.Key) != "order-7" || m.Partition != 2 {
		t.Fatalf("delivery key %q partition %d, want order-7 on 2", m.Key, m.Partition)
	}
	if err := mr.tr.Ack(ctx, m); err != nil {
		t.Fatal(err)
	}
}
