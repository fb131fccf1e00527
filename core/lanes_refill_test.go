package babelqueue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
	"github.com/babelqueue/babelqueue-go/core/driver"
)

// readyMemory is the in-memory transport with the receive that never
// waits (driver.ReadyReceiver), as a prefetching binding offers it: a Pop
// with no wait. It counts the messages ReceiveReady handed out.
type readyMemory struct {
	*bqtest.InMemoryTransport
	ready atomic.Int64
}

var _ driver.ReadyReceiver = (*readyMemory)(nil)

func (r *readyMemory) ReceiveReady(queue string) (*ReceivedMessage, bool) {
	msg, err := r.Pop(context.Background(), queue, 0)
	if err != nil || msg == nil {
		return nil, false
	}
	r.ready.Add(1)
	return msg, true
}

// notifyingMemory is readyMemory that also announces ready messages
// (driver.ReadyNotifier): after every write and every hand-back, whether
// or not a Receive waits (a spurious call only wakes a worker for
// nothing). It announces nothing else, so a loop that missed a message
// the announcements should have covered stalls and the test times out.
type notifyingMemory struct {
	readyMemory
	fn atomic.Pointer[func()]
}

var _ driver.ReadyNotifier = (*notifyingMemory)(nil)

func newNotifyingMemory(opts ...bqtest.MemoryOption) *notifyingMemory {
	return &notifyingMemory{readyMemory: readyMemory{InMemoryTransport: bqtest.NewInMemoryTransport(opts...)}}
}

func (n *notifyingMemory) announce() {
	if fn := n.fn.Load(); fn != nil {
		(*fn)()
	}
}

func (n *notifyingMemory) NotifyReady(_ string, fn func()) bool {
	if fn == nil {
		n.fn.Store(nil)
	} else {
		n.fn.Store(&fn)
	}
	return true
}

func (n *notifyingMemory) Send(ctx context.Context, out *driver.Outgoing) (driver.Receipt, error) {
	r, err := n.InMemoryTransport.Send(ctx, out)
	n.announce()
	return r, err
}

func (n *notifyingMemory) HandBack(ctx context.Context, msg *ReceivedMessage) error {
	err := n.InMemoryTransport.HandBack(ctx, msg)
	n.announce()
	return err
}

// readyTransports runs fn with each kind of ready-receiving transport.
func readyTransports(t *testing.T, fn func(t *testing.T, mem Transport, ready *readyMemory), opts ...bqtest.MemoryOption) {
	t.Run("ready", func(t *testing.T) {
		r := &readyMemory{InMemoryTransport: bqtest.NewInMemoryTransport(opts...)}
		fn(t, r, r)
	})
	t.Run("notifying", func(t *testing.T) {
		n := newNotifyingMemory(opts...)
		fn(t, n, &n.readyMemory)
	})
}

// A busy lane at the pending bound refills its freed slots through
// ReceiveReady on the settling worker: per-key order, the bound and every
// acknowledgement hold.
func TestLanesRefillFromReadyReceiverKeepsOrderAndBound(t *testing.T) {
	readyTransports(t, testLanesRefillKeepsOrderAndBound, bqtest.WithMemoryPartitions(2))
}

func testLanesRefillKeepsOrderAndBound(t *testing.T, tr Transport, mem *readyMemory) {
	const bound = 6
	a := testApp(tr, WithPollTimeout(time.Hour), WithConcurrency(4, OrderKey), WithMaxPending(bound))
	const keys, n = 3, 60
	var (
		mu        sync.Mutex
		order     = map[string][]int{}
		total     atomic.Int64
		overBound atomic.Int64
	)
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		// A handler that takes a moment keeps the loop at its bound, so
		// that settles free slots while nobody receives: with instant
		// handlers a worker woken to receive may hold that role for every
		// refill, and ReceiveReady is then never called (seen once in CI).
		time.Sleep(200 * time.Microsecond)
		if f := mem.InFlight("q"); f > bound {
			overBound.Store(int64(f))
		}
		var m seqMsg
		if err := env.BindData(&m); err != nil {
			return err
		}
		mu.Lock()
		order[m.K] = append(order[m.K], m.N)
		mu.Unlock()
		total.Add(1)
		return nil
	})
	// Published before the loop starts: the lanes fill up to the bound
	// and a settle finds a message ready.
	publishSeq(t, a, "q", keys, n, true)
	stop := lanesRun(t, a, "q")
	bqtest.WaitUntil(t, 10*time.Second, "every message handled", func() bool { return total.Load() == keys*n })
	if err := stop(); err != nil {
		t.Fatalf("Consume = %v", err)
	}
	for k, got := range order {
		if !slices.IsSorted(got) || len(got) != n {
			t.Errorf("key %s handled in order %v, want 0..%d ascending", k, got, n-1)
		}
	}
	if f := overBound.Load(); f != 0 {
		t.Errorf("%d messages received and unfinished, over the bound %d", f, bound)
	}
	if mem.Acked("q") != keys*n {
		t.Errorf("acked %d, want %d", mem.Acked("q"), keys*n)
	}
	if mem.ready.Load() == 0 {
		t.Error("no freed slot was refilled through ReceiveReady")
	}
}

// At the bound, a freed slot is refilled by ReceiveReady only up to the
// bound again.
func TestLanesRefillStaysAtTheBound(t *testing.T) {
	readyTransports(t, testLanesRefillStaysAtTheBound, bqtest.WithMemoryPartitions(2))
}

func testLanesRefillStaysAtTheBound(t *testing.T, tr Transport, mem *readyMemory) {
	a := testApp(tr, WithPollTimeout(time.Hour), WithConcurrency(2, OrderKey), WithMaxPending(3))
	release := make(chan struct{})
	var slowRan, otherRan atomic.Int64
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		var m seqMsg
		if err := env.BindData(&m); err != nil {
			return err
		}
		if m.K == "hot" {
			if slowRan.Add(1) > 1 {
				<-release
			}
			return nil
		}
		otherRan.Add(1)
		return nil
	})
	for i := range 5 {
		if _, err := a.Publish(context.Background(), "urn:t:seq", seqMsg{K: "hot", N: i}, ToQueue("q"), WithKey([]byte("hot"))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Publish(context.Background(), "urn:t:seq", seqMsg{K: "other", N: 0}, ToQueue("q"), WithKey([]byte("other"))); err != nil {
		t.Fatal(err)
	}
	stop := lanesRun(t, a, "q")
	// The first hot message settles and frees a slot while its lane holds
	// more: the worker refills it, and the hot lane then blocks.
	bqtest.WaitUntil(t, 10*time.Second, "the bound reached behind the blocked hot message", func() bool { return slowRan.Load() == 2 && mem.InFlight("q") == 3 })
	time.Sleep(20 * time.Millisecond)
	if n := mem.InFlight("q"); n != 3 {
		t.Errorf("%d messages received and unfinished, want the bound 3", n)
	}
	close(release)
	bqtest.WaitUntil(t, 10*time.Second, "all acknowledged", func() bool { return mem.Acked("q") == 6 })
	if otherRan.Load() != 1 {
		t.Errorf("the other key ran %d times, want 1", otherRan.Load())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A message ReceiveReady returns while the loop stops is handed back, and
// Consume still returns with every message either acknowledged or back in
// the queue.
func TestLanesRefillWhileStoppingHandsBack(t *testing.T) {
	readyTransports(t, testLanesRefillWhileStoppingHandsBack, bqtest.WithMemoryPartitions(1))
}

func testLanesRefillWhileStoppingHandsBack(t *testing.T, tr Transport, mem *readyMemory) {
	a := testApp(tr, WithPollTimeout(time.Hour), WithConcurrency(3, OrderKey), WithMaxPending(4))
	var handled atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	a.Handle("urn:t:seq", func(context.Context, *Envelope) error {
		if handled.Add(1) == 50 {
			cancel()
		}
		return nil
	})
	publishSeq(t, a, "q", 2, 100, true)
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx, "q") }()
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Consume did not return")
	}
	if f := mem.InFlight("q"); f != 0 {
		t.Errorf("%d messages left reserved after Consume returned", f)
	}
	if got := mem.Acked("q") + mem.Len("q"); got != 200 {
		t.Errorf("acked %d + queued %d = %d, want 200", mem.Acked("q"), mem.Len("q"), got)
	}
}

// With a transport that announces ready messages, the worker that runs a
// message it received leaves the receiver role free: a message of another
// key that arrives while that handler is still running is received (the
// announcement wakes a worker) and runs beside it.
func TestLanesAnnouncedMessageRunsBesideASlowOne(t *testing.T) {
	mem := newNotifyingMemory(bqtest.WithMemoryPartitions(2))
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(4, OrderKey))
	release := make(chan struct{})
	slowRunning := make(chan struct{})
	var fastDone atomic.Bool
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		var m seqMsg
		if err := env.BindData(&m); err != nil {
			return err
		}
		if m.K == "slow" {
			close(slowRunning)
			<-release
			return nil
		}
		fastDone.Store(true)
		return nil
	})
	stop := lanesRun(t, a, "q")
	if _, err := a.Publish(context.Background(), "urn:t:seq", seqMsg{K: "slow"}, ToQueue("q"), WithKey([]byte("slow"))); err != nil {
		t.Fatal(err)
	}
	<-slowRunning
	if _, err := a.Publish(context.Background(), "urn:t:seq", seqMsg{K: "fast"}, ToQueue("q"), WithKey([]byte("fast"))); err != nil {
		t.Fatal(err)
	}
	bqtest.WaitUntil(t, 10*time.Second, "the later message handled while the slow one runs", fastDone.Load)
	close(release)
	bqtest.WaitUntil(t, 10*time.Second, "both acknowledged", func() bool { return mem.Acked("q") == 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
