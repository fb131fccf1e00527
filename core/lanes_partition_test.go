package babelqueue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// keyOnPartition returns a key the in-memory transport stores on
// partition p.
func keyOnPartition(t *testing.T, mem *bqtest.InMemoryTransport, p int) []byte {
	t.Helper()
	for i := range 1000 {
		k := fmt.Appendf(nil, "k-%d", i)
		if mem.PartitionFor(k) == p {
			return k
		}
	}
	t.Fatalf("no key found for partition %d", p)
	return nil
}

// laneTimeline records, per message, when its handler started and when
// it was settled, on the App's clock and in event order.
type laneTimeline struct {
	clock *bqtest.FakeClock
	mu    sync.Mutex
	start map[string]time.Time
	end   map[string]time.Time
	seen  chan string // the name of each message whose handler started
}

func (l *laneTimeline) OnSettle(_ context.Context, d *Delivery, _ *Settlement) {
	if d.Envelope == nil {
		return
	}
	var m seqMsg
	if err := d.Envelope.BindData(&m); err != nil {
		return
	}
	l.mu.Lock()
	l.end[fmt.Sprintf("%s%d", m.K, m.N)] = l.clock.Now()
	l.mu.Unlock()
}

// A partition lane whose message settled takes the next message of its
// partition at once: it does not wait for another lane's handler to free
// a pending slot, for a poll or for a timer. The loop sits at its pending
// bound with partition A's messages (A1 runs, A2-A4 wait) while B1, the
// next message of partition B, is held by the transport behind them; B0
// settles while A1 is still running, and B1 must start then, the App's
// clock unmoved.
func TestLanesPartitionLaneTakesItsNextMessageWhenItSettles(t *testing.T) {
	clock := bqtest.NewFakeClock(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(2), bqtest.WithMemoryClock(clock))
	tl := &laneTimeline{clock: clock, start: map[string]time.Time{}, end: map[string]time.Time{}, seen: make(chan string, 16)}
	a := testApp(mem, WithClock(clock), WithPollTimeout(time.Hour),
		WithConcurrency(3, OrderPartition), WithMaxPending(4), WithHooks(tl))
	release := map[string]chan struct{}{"A1": make(chan struct{}), "B0": make(chan struct{})}
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		var m seqMsg
		if err := env.BindData(&m); err != nil {
			return err
		}
		name := fmt.Sprintf("%s%d", m.K, m.N)
		tl.mu.Lock()
		tl.start[name] = clock.Now()
		tl.mu.Unlock()
		tl.seen <- name
		if ch := release[name]; ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	keyA, keyB := keyOnPartition(t, mem, 0), keyOnPartition(t, mem, 1)
	pub := func(lane string, key []byte, n int) {
		t.Helper()
		if _, err := a.Publish(context.Background(), "urn:t:seq", seqMsg{K: lane, N: n}, ToQueue("q"), WithKey(key)); err != nil {
			t.Fatal(err)
		}
	}
	// In the queue's order: B0, then A1-A5, then B1.
	pub("B", keyB, 0)
	for n := 1; n <= 5; n++ {
		pub("A", keyA, n)
	}
	pub("B", keyB, 1)

	stop := lanesRun(t, a, "q")
	defer func() {
		for _, ch := range release {
			select {
			case <-ch:
			default:
				close(ch)
			}
		}
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	started := map[string]bool{}
	waitStarted := func(want string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !started[want] {
			select {
			case got := <-tl.seen:
				started[got] = true
			case <-deadline:
				t.Fatalf("%s did not start (A1 still running, the App's clock unmoved): its lane waited for another lane's settlement", want)
			}
		}
	}
	waitStarted("B0")
	waitStarted("A1")
	// The loop is at its bound: A1 runs and the receiver files A2-A4.
	bqtest.WaitUntil(t, 10*time.Second, "the pending bound reached", func() bool { return mem.InFlight("q") == 4 })
	close(release["B0"])
	waitStarted("B1")

	tl.mu.Lock()
	defer tl.mu.Unlock()
	if gap := tl.start["B1"].Sub(tl.end["B0"]); gap != 0 {
		t.Errorf("B1 started %v after B0 settled on the App's clock, want 0 (no wait on a timer or a poll)", gap)
	}
	if _, done := tl.end["A1"]; done {
		t.Error("A1 settled before B1 started: the test did not hold partition A's handler")
	}
}
