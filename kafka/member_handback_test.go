package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// TestMemberHandBackKeepsTheAcksBelowIt (issue 14): records 0, 1, 2 of one
// partition are handed out, 0 is still being handled, 1 and 2 are handed
// back (in either order). The hand-back re-reads the partition from 1, not
// from 0: the Ack of 0 still counts and is committed, and 1 is the next
// record delivered.
func TestMemberHandBackKeepsTheAcksBelowIt(t *testing.T) {
	for _, order := range [][]string{{"0@1", "0@2"}, {"0@2", "0@1"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			mr := newMemberRig(t, WithCommitInterval(0))
			ctx := context.Background()
			appendRecords(t, mr.rig, 0, 3)
			got := popAll(t, mr.rig, 3)
			for _, k := range order {
				if err := mr.tr.HandBack(ctx, got[k]); err != nil {
					t.Fatalf("HandBack(%s): %v", k, err)
				}
			}
			if err := mr.tr.Ack(ctx, got["0@0"]); err != nil {
				t.Fatalf("Ack of a delivery below the handed-back ones: %v", err)
			}
			mr.wantCommitted(t, 0, 1)
			for _, want := range []string{"0@1", "0@2"} {
				m, err := mr.tr.Receive(ctx, "orders", time.Second)
				if err != nil || m == nil {
					t.Fatalf("Receive = %v, %v; want %s again", m, err, want)
				}
				if k := recordName(m); k != want {
					t.Fatalf("delivered %s, want %s", k, want)
				}
				if err := mr.tr.Ack(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			mr.wantCommitted(t, 0, 3)
			mr.wantBudgetEmpty(t)
		})
	}
}

// TestMemberHandBackCarriesASettledRecordBelowIt: a record settled after
// an unsettled one, both below the hand-back, is carried over too, so the
// commit reaches the hand-back once the earlier one settles; a record
// above the hand-back is refused and delivered again.
func TestMemberHandBackCarriesASettledRecordBelowIt(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(0))
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 4)
	got := popAll(t, mr.rig, 4)
	if err := mr.tr.Ack(ctx, got["0@1"]); err != nil {
		t.Fatal(err)
	}
	if err := mr.tr.HandBack(ctx, got["0@2"]); err != nil {
		t.Fatal(err)
	}
	if err := mr.tr.Ack(ctx, got["0@3"]); err == nil {
		t.Fatal("Ack of a delivery above the hand-back returned nil")
	}
	if err := mr.tr.Ack(ctx, got["0@0"]); err != nil {
		t.Fatalf("Ack of a delivery below the hand-back: %v", err)
	}
	mr.wantCommitted(t, 0, 2)
	again := popAll(t, mr.rig, 2)
	if again["0@2"] == nil || again["0@3"] == nil {
		t.Fatalf("delivered again %v, want 0@2 and 0@3", again)
	}
	if r, _ := mr.tr.budget.held(); r != 2 {
		t.Fatalf("budget holds %d records, want the 2 delivered again", r)
	}
}

// TestMemberHandBackDuringRevocationKeepsTheCarriedAcks: a delivery
// carried over by a hand-back still settles within the revocation's
// settle window and its commit is made within the ending generation.
func TestMemberHandBackDuringRevocationKeepsTheCarriedAcks(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(time.Hour))
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 3)
	got := popAll(t, mr.rig, 3)
	if err := mr.tr.HandBack(ctx, got["0@1"]); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { mr.gen.End(); close(ended) }()
	bqtest.WaitUntil(t, 5*time.Second, "the revocation to start", func() bool { return mr.state(0) != asgLive })
	if err := mr.tr.Ack(ctx, got["0@0"]); err != nil {
		t.Fatalf("Ack within the revoke timeout: %v", err)
	}
	<-ended
	mr.wantCommitted(t, 0, 1)
	mr.wantBudgetEmpty(t)
}

// TestAppStopKeepsTheAckOfARunningHandler (issue 14): a concurrent App
// stops while the handler of record 0 runs and records 1 and 2 wait in its
// lane. They are handed back; the handler then finishes within the settle
// timeout: its Ack counts (committed, no ERROR logged) and 1 is the next
// record delivered.
func TestAppStopKeepsTheAckOfARunningHandler(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(0), WithMaxWaitTime(20*time.Millisecond))
	var logs bqtest.SyncBuffer
	app, err := babelqueue.NewApp(mr.tr, babelqueue.WithDefaultQueue("orders"),
		babelqueue.WithPollTimeout(20*time.Millisecond), babelqueue.WithSettleTimeout(5*time.Second),
		babelqueue.WithConcurrency(2, babelqueue.OrderPartition), babelqueue.WithMaxPending(3),
		babelqueue.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		t.Fatal(err)
	}
	fb := newFirstCallBlocks()
	app.Handle("urn:babel:orders:created", fb.handle)
	for i := range 3 {
		mr.log.append("orders", 0, kafkago.Message{Key: fmt.Appendf(nil, "k%d", i), Value: []byte(envelope(t, 0))})
	}
	ctx, cancel := context.WithCancel(context.Background())
	consumed := make(chan error, 1)
	go func() { consumed <- app.Consume(ctx, "orders") }()
	<-fb.started
	stopWithWaitingHandedBack(t, mr.member(), cancel)
	close(fb.release)
	if err := <-consumed; err != nil {
		t.Fatal(err)
	}
	mr.wantCommitted(t, 0, 1)
	if out := logs.String(); strings.Contains(out, "level=ERROR") {
		t.Fatalf("an ERROR was logged:\n%s", out)
	}
	if n := fb.calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
	next, err := mr.tr.Receive(context.Background(), "orders", time.Second)
	if err != nil || next == nil {
		t.Fatalf("Receive = %v, %v", next, err)
	}
	if k := recordName(next); k != "0@1" {
		t.Fatalf("delivered %s next, want 0@1", k)
	}
}

// stopWithWaitingHandedBack waits until partition 0 of m has handed out
// three records (one in its handler, two waiting in the App's lane), stops
// the App with cancel and waits until the waiting records were handed back
// (the partition's first reader retired).
func stopWithWaitingHandedBack(t *testing.T, m *memberReader, cancel context.CancelFunc) {
	t.Helper()
	first := func() *assignment { m.mu.Lock(); defer m.mu.Unlock(); return m.parts[0] }()
	bqtest.WaitUntil(t, 5*time.Second, "records 1 and 2 to wait in the lane", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(first.out) == 3
	})
	cancel()
	bqtest.WaitUntil(t, 5*time.Second, "the waiting records to be handed back", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return first.state == asgRetired
	})
}

// recordName names a delivery "<partition>@<offset>", as popAll does.
func recordName(m *babelqueue.ReceivedMessage) string {
	d, _ := recordOf(m)
	return fmt.Sprintf("%d@%d", d.msg.Partition, d.msg.Offset)
}

// TestMemberCommitOfAHandedBackAssignmentGoesThroughItsSuccessor: a commit
// of the prefix of an assignment a hand-back retired (an Ack's commit that
// raced the hand-back) never takes the partition's offset back below what
// its successor committed.
func TestMemberCommitOfAHandedBackAssignmentGoesThroughItsSuccessor(t *testing.T) {
	mr := newMemberRig(t, WithCommitInterval(time.Hour))
	ctx := context.Background()
	appendRecords(t, mr.rig, 0, 4)
	got := popAll(t, mr.rig, 4)
	if err := mr.tr.Ack(ctx, got["0@0"]); err != nil {
		t.Fatal(err)
	}
	old, _ := recordOf(got["0@0"])
	if err := mr.tr.HandBack(ctx, got["0@2"]); err != nil {
		t.Fatal(err)
	}
	if err := mr.tr.Ack(ctx, got["0@1"]); err != nil {
		t.Fatal(err)
	}
	m := mr.member()
	next := func() *assignment { m.mu.Lock(); defer m.mu.Unlock(); return m.parts[0] }()
	if next == old.asg {
		t.Fatal("the hand-back started no successor")
	}
	if err := m.commit(mr.gen, []*assignment{next}); err != nil {
		t.Fatal(err)
	}
	mr.wantCommitted(t, 0, 2)
	if err := m.commit(mr.gen, []*assignment{old.asg}); err != nil {
		t.Fatal(err)
	}
	if c := mr.offsets.get("orders", 0); c != 2 {
		t.Fatalf("a commit of the handed-back assignment moved the offset to %d, want it to stay 2", c)
	}
}

// firstCallBlocks is a handler whose first call closes started and waits
// for release, then succeeds; every later call fails. calls counts them.
type firstCallBlocks struct {
	started, release chan struct{}
	calls            atomic.Int32
}

func newFirstCallBlocks() *firstCallBlocks {
	return &firstCallBlocks{started: make(chan struct{}), release: make(chan struct{})}
}

func (f *firstCallBlocks) handle(context.Context, *babelqueue.Envelope) error {
	if f.calls.Add(1) == 1 {
		close(f.started)
		<-f.release
		return nil
	}
	return errors.New("only the first record may be handled")
}
