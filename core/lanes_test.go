package babelqueue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/bqtest"
)

// seqMsg is the data of the messages of the concurrency tests.
type seqMsg struct {
	K string `json:"k"`
	N int    `json:"n"`
}

// lanesRun consumes queue q with a until stop is called, which waits for
// Consume to return and reports its error.
func lanesRun(t *testing.T, a *App, q string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx, q) }()
	return func() error {
		cancel()
		select {
		case err := <-errc:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Consume did not return after cancel")
			return nil
		}
	}
}

// publishSeq publishes keys × n messages, key by key interleaved, each
// with its key (keyless when keyed is false) and sequence number.
func publishSeq(t *testing.T, a *App, q string, keys, n int, keyed bool) {
	t.Helper()
	for i := range n {
		for k := range keys {
			key := fmt.Sprintf("key-%d", k)
			opts := []PublishOption{ToQueue(q)}
			if keyed {
				opts = append(opts, WithKey([]byte(key)))
			}
			if _, err := a.Publish(context.Background(), "urn:t:seq", seqMsg{K: key, N: i}, opts...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// concurrencyGauge counts handlers running at once and the highest count.
type concurrencyGauge struct{ now, peak atomic.Int64 }

func (g *concurrencyGauge) enter() {
	n := g.now.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}
func (g *concurrencyGauge) leave() { g.now.Add(-1) }

// committedSum adds the commit positions of the partitions of queue.
func committedSum(mem *bqtest.InMemoryTransport, queue string, parts int) int {
	sum := 0
	for p := range parts {
		sum += int(mem.Committed(queue, p))
	}
	return sum
}

func TestLanesKeepPerKeyOrderAndRunKeysInParallel(t *testing.T) {
	before := runtime.NumGoroutine()
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(4))
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(8, OrderKey))
	const keys, n = 12, 40
	var (
		mu    sync.Mutex
		order = map[string][]int{}
		total atomic.Int64
		gauge concurrencyGauge
	)
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		gauge.enter()
		defer gauge.leave()
		var m seqMsg
		if err := env.BindData(&m); err != nil {
			return err
		}
		mu.Lock()
		order[m.K] = append(order[m.K], m.N)
		mu.Unlock()
		time.Sleep(time.Duration(m.N%3) * 100 * time.Microsecond)
		total.Add(1)
		return nil
	})
	stop := lanesRun(t, a, "q")
	publishSeq(t, a, "q", keys, n, true)
	bqtest.WaitUntil(t, 10*time.Second, "every message handled", func() bool { return total.Load() == keys*n })
	if err := stop(); err != nil {
		t.Fatalf("Consume = %v", err)
	}
	for k, got := range order {
		if !slices.IsSorted(got) || len(got) != n {
			t.Errorf("key %s handled in order %v, want 0..%d ascending", k, got, n-1)
		}
	}
	if p := gauge.peak.Load(); p < 2 || p > 8 {
		t.Errorf("peak handlers at once = %d, want 2..8", p)
	}
	if sum := committedSum(mem, "q", 4); sum != keys*n {
		t.Errorf("committed positions add up to %d, want all %d", sum, keys*n)
	}
	if mem.Acked("q") != keys*n {
		t.Errorf("acked %d, want %d", mem.Acked("q"), keys*n)
	}
	if got, ok := settleGoroutines(before); !ok {
		t.Errorf("goroutines: %d before, %d after Consume returned", before, got)
	}
}

func TestLanesKeylessMessagesKeepPartitionOrder(t *testing.T) {
	const parts = 3
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(parts))
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(6, OrderKey))
	var (
		mu     sync.Mutex
		byPart = map[int32][]int{}
		total  atomic.Int64
		gauge  concurrencyGauge
	)
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		gauge.enter()
		defer gauge.leave()
		var m seqMsg
		env.BindData(&m)
		time.Sleep(200 * time.Microsecond)
		mu.Lock()
		// Keyless messages go round robin: publish i is on partition i%parts.
		byPart[int32(m.N%parts)] = append(byPart[int32(m.N%parts)], m.N)
		mu.Unlock()
		total.Add(1)
		return nil
	})
	stop := lanesRun(t, a, "q")
	publishSeq(t, a, "q", 1, 60, false)
	bqtest.WaitUntil(t, 10*time.Second, "every message handled", func() bool { return total.Load() == 60 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for p, got := range byPart {
		if !slices.IsSorted(got) || len(got) != 20 {
			t.Errorf("partition %d handled %v, want its 20 messages in order", p, got)
		}
	}
	if p := gauge.peak.Load(); p > parts {
		t.Errorf("peak %d handlers at once over %d partition lanes", p, parts)
	}
}

func TestLanesPartitionOrderingSerializesAPartition(t *testing.T) {
	mem := bqtest.NewInMemoryTransport() // one partition
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(4, OrderPartition))
	var gauge concurrencyGauge
	var total atomic.Int64
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		gauge.enter()
		defer gauge.leave()
		time.Sleep(100 * time.Microsecond)
		total.Add(1)
		return nil
	})
	stop := lanesRun(t, a, "q")
	publishSeq(t, a, "q", 4, 5, true)
	bqtest.WaitUntil(t, 10*time.Second, "every message handled", func() bool { return total.Load() == 20 })
	stop()
	if p := gauge.peak.Load(); p != 1 {
		t.Errorf("peak %d handlers at once on one partition under OrderPartition, want 1", p)
	}
}

func TestLanesOrderNoneRunsOneKeyInParallel(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(4, OrderNone))
	release := make(chan struct{})
	var gauge concurrencyGauge
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		gauge.enter()
		defer gauge.leave()
		<-release
		return nil
	})
	stop := lanesRun(t, a, "q")
	publishSeq(t, a, "q", 1, 4, true)
	bqtest.WaitUntil(t, 10*time.Second, "four handlers of one key at once", func() bool { return gauge.now.Load() == 4 })
	close(release)
	bqtest.WaitUntil(t, 10*time.Second, "all acknowledged", func() bool { return mem.Acked("q") == 4 })
	stop()
}

func TestLanesSlowMessageHoldsOnlyItsLaneAndItsPartitionCommit(t *testing.T) {
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(2))
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(4, OrderKey), WithMaxPending(64))
	hold := make(chan struct{})
	var others atomic.Int64
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		var m seqMsg
		env.BindData(&m)
		if m.K == "key-0" && m.N == 0 {
			<-hold
			return nil
		}
		others.Add(1)
		return nil
	})
	stop := lanesRun(t, a, "q")
	publishSeq(t, a, "q", 6, 5, true) // 30 messages; key-0's five wait behind its first
	bqtest.WaitUntil(t, 10*time.Second, "the other keys handled", func() bool { return others.Load() == 25 && mem.Acked("q") == 25 })
	slowPart := mem.PartitionFor([]byte("key-0"))
	if c := mem.Committed("q", slowPart); c != 0 {
		t.Errorf("partition %d committed %d past the held message at offset 0", slowPart, c)
	}
	time.Sleep(10 * time.Millisecond)
	if mem.Acked("q") != 25 {
		t.Errorf("acked %d while one message is held, want the other keys' 25", mem.Acked("q"))
	}
	close(hold)
	bqtest.WaitUntil(t, 10*time.Second, "key-0 handled", func() bool { return others.Load() == 29 })
	bqtest.WaitUntil(t, 10*time.Second, "all acknowledged", func() bool { return mem.Acked("q") == 30 })
	if sum := committedSum(mem, "q", 2); sum != 30 {
		t.Errorf("committed positions add up to %d after the slow message settled, want 30", sum)
	}
	stop()
}

func TestLanesFailedSettleWriteHandsBackTheLaneAndPausesOnlyIt(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := bqtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(2))
	const backoff = 5 * time.Second
	rec := &recorder{}
	a := testApp(mem, append(rec.options(), WithPollTimeout(time.Hour), WithClock(clock), WithFailureBackoff(backoff),
		WithConcurrency(4, OrderKey))...)
	var (
		mu       sync.Mutex
		handled  = map[string][]int{}
		failOnce atomic.Bool
		faulted  atomic.Bool
	)
	failOnce.Store(true)
	mem.SetFault(func(op, queue string) error {
		if op == "retry" && faulted.CompareAndSwap(false, true) {
			return errors.New("broker refuses the write")
		}
		return nil
	})
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		var m seqMsg
		env.BindData(&m)
		mu.Lock()
		handled[m.K] = append(handled[m.K], m.N)
		mu.Unlock()
		if m.K == "key-0" && m.N == 0 && failOnce.CompareAndSwap(true, false) {
			return errors.New("handler fails once")
		}
		return nil
	})
	stop := lanesRun(t, a, "q")
	publishSeq(t, a, "q", 3, 4, true)
	count := func(k string) int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled[k])
	}
	bqtest.WaitUntil(t, 10*time.Second, "the other keys handled during the pause", func() bool { return count("key-1") == 4 && count("key-2") == 4 })
	if err := clock.WaitForTimers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if got := count("key-0"); got != 1 {
		t.Fatalf("key-0 handled %d times while its lane is paused, want 1", got)
	}
	if !anyIs(rec.errors(), ErrSettle) {
		t.Errorf("the failed retry write was not reported: %v", rec.errors())
	}
	clock.Advance(backoff)
	bqtest.WaitUntil(t, 10*time.Second, "key-0 handled after the pause", func() bool { return count("key-0") == 5 })
	bqtest.WaitUntil(t, 10*time.Second, "all acknowledged", func() bool { return mem.Acked("q") == 12 })
	mu.Lock()
	if got := handled["key-0"]; !slices.Equal(got, []int{0, 0, 1, 2, 3}) {
		t.Errorf("key-0 handled %v, want [0 0 1 2 3]: its later messages must not overtake the handed-back one", got)
	}
	mu.Unlock()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got, ok := settleGoroutines(before); !ok {
		t.Errorf("goroutines: %d before, %d after Consume returned", before, got)
	}
}

func TestLanesBoundPendingMessages(t *testing.T) {
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(4))
	// One key: one message runs, the receiver reads on into its lane
	// until the bound (a worker only receives while it has nothing to run).
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(2, OrderKey), WithMaxPending(3))
	release := make(chan struct{})
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		<-release
		return nil
	})
	stop := lanesRun(t, a, "q")
	publishSeq(t, a, "q", 1, 10, true)
	bqtest.WaitUntil(t, 10*time.Second, "three messages reserved", func() bool { return mem.InFlight("q") == 3 })
	time.Sleep(20 * time.Millisecond)
	if n := mem.InFlight("q"); n != 3 {
		t.Errorf("%d messages received and unfinished, want the bound 3", n)
	}
	if n := mem.Len("q"); n != 7 {
		t.Errorf("%d messages left in the queue, want 7", n)
	}
	close(release)
	bqtest.WaitUntil(t, 10*time.Second, "all acknowledged", func() bool { return mem.Acked("q") == 10 })
	stop()
}

func TestLanesStopHandsBackWaitingAndLetsRunningSettle(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := bqtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithPollTimeout(time.Hour), WithClock(clock), WithConcurrency(2, OrderKey), WithSettleTimeout(30*time.Second))
	running := make(chan struct{}, 1)
	finish := make(chan struct{})
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		running <- struct{}{}
		<-finish
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx, "q") }()
	publishSeq(t, a, "q", 1, 3, true)
	<-running
	bqtest.WaitUntil(t, 10*time.Second, "three reserved", func() bool { return mem.InFlight("q") == 3 })
	cancel()
	// The two messages waiting behind the running one go back at once.
	bqtest.WaitUntil(t, 10*time.Second, "waiting messages handed back", func() bool { return mem.Len("q") == 2 && mem.InFlight("q") == 1 })
	select {
	case err := <-errc:
		t.Fatalf("Consume returned %v while a handler runs within the settle timeout", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(finish)
	if err := <-errc; err != nil {
		t.Fatalf("Consume = %v", err)
	}
	if mem.Acked("q") != 1 || mem.Len("q") != 2 {
		t.Errorf("acked %d, left %d; want the running one settled and two left", mem.Acked("q"), mem.Len("q"))
	}
	if got, ok := settleGoroutines(before); !ok {
		t.Errorf("goroutines: %d before, %d after Consume returned", before, got)
	}
}

func TestLanesStopCancelsHandlersAfterTheSettleTimeout(t *testing.T) {
	before := runtime.NumGoroutine()
	clock := bqtest.NewFakeClock(time.Unix(1_700_000_000, 0))
	mem := bqtest.NewInMemoryTransport()
	const grace = 30 * time.Second
	a := testApp(mem, WithPollTimeout(time.Hour), WithClock(clock), WithConcurrency(2, OrderKey), WithSettleTimeout(grace))
	running := make(chan struct{}, 2)
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error {
		running <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(ctx, "q") }()
	publishSeq(t, a, "q", 2, 1, true)
	<-running
	<-running
	cancel()
	if err := clock.WaitForTimers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatalf("Consume returned %v before the settle timeout", err)
	case <-time.After(20 * time.Millisecond):
	}
	clock.Advance(grace)
	if err := <-errc; err != nil {
		t.Fatalf("Consume = %v", err)
	}
	if mem.Len("q") != 2 || mem.Acked("q") != 0 {
		t.Errorf("left %d acked %d; want both handed back uncounted", mem.Len("q"), mem.Acked("q"))
	}
	for _, m := range mem.Messages("q") {
		if env := mustDecode(t, m.Body); env.Attempts != 0 {
			t.Errorf("handed-back message counted an attempt: %d", env.Attempts)
		}
	}
	if got, ok := settleGoroutines(before); !ok {
		t.Errorf("goroutines: %d before, %d after Consume returned", before, got)
	}
}

func TestLanesTransportClosedStopsConsume(t *testing.T) {
	before := runtime.NumGoroutine()
	mem := bqtest.NewInMemoryTransport()
	a := testApp(mem, WithPollTimeout(time.Hour), WithConcurrency(3, OrderKey))
	a.Handle("urn:t:seq", func(ctx context.Context, env *Envelope) error { return nil })
	errc := make(chan error, 1)
	go func() { errc <- a.Consume(context.Background(), "q") }()
	publishSeq(t, a, "q", 2, 2, true)
	bqtest.WaitUntil(t, 10*time.Second, "handled", func() bool { return mem.Acked("q") == 4 })
	mem.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Consume = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Consume did not stop on a closed transport")
	}
	if got, ok := settleGoroutines(before); !ok {
		t.Errorf("goroutines: %d before, %d after Consume returned", before, got)
	}
}

func TestConcurrencyOptionsRejectBadValues(t *testing.T) {
	mem := bqtest.NewInMemoryTransport()
	for _, o := range []Option{WithConcurrency(0, OrderKey), WithConcurrency(2, Ordering(9)), WithMaxPending(0)} {
		if a, err := NewApp(mem, o); !errors.Is(err, ErrInvalidOption) || a != nil {
			t.Errorf("NewApp = %v, %v; want no App and ErrInvalidOption", a, err)
		}
	}
	if OrderKey.String() != "key" || OrderPartition.String() != "partition" || OrderNone.String() != "none" {
		t.Error("ordering names")
	}
}

func TestPublishKeySurvivesRetryDeadLetterAndRedrive(t *testing.T) {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(3))
	a := testApp(mem, WithMaxAttempts(2))
	a.Handle("urn:t:seq", func(context.Context, *Envelope) error { return errors.New("fails") })
	if _, err := a.Publish(ctx, "urn:t:seq", seqMsg{K: "order-7"}, ToQueue("orders"), WithKey([]byte("order-7"))); err != nil {
		t.Fatal(err)
	}
	want := mem.Messages("orders")[0].Partition
	checkKey := func(queue string) {
		t.Helper()
		ms := mem.Messages(queue)
		if len(ms) != 1 || string(ms[0].Key) != "order-7" || ms[0].Partition != want {
			t.Fatalf("%s holds %+v, want one message keyed order-7 on partition %d", queue, ms, want)
		}
	}
	m, _ := mem.Pop(ctx, "orders", 0)
	if string(m.Key) != "order-7" || m.Partition != want {
		t.Fatalf("received key %q partition %d", m.Key, m.Partition)
	}
	mem.HandBack(ctx, m)
	a.Drain(ctx, "orders") // first attempt fails: retried; second: dead-lettered
	checkKey("orders.dlq")
	if _, err := a.Redrive(ctx, "orders.dlq"); err != nil {
		t.Fatal(err)
	}
	checkKey("orders")
	a.Handle("urn:t:seq", func(context.Context, *Envelope) error { return nil })
	// The retry copy, checked on its own queue.
	mem2 := bqtest.NewInMemoryTransport()
	b := testApp(mem2, WithMaxAttempts(3))
	b.Handle("urn:t:seq", func(context.Context, *Envelope) error { return errors.New("fails") })
	b.Publish(ctx, "urn:t:seq", nil, ToQueue("q"), WithKey([]byte("k")))
	m, _ = mem2.Pop(ctx, "q", 0)
	mem2.HandBack(ctx, m)
	mem2.SetFault(func(op, queue string) error {
		if op == "dead_letter" {
			return errors.New("stop before the dead letter")
		}
		return nil
	})
	if _, err := b.Drain(ctx, "q"); err == nil {
		t.Fatal("Drain passed the refused dead letter")
	}
	for _, m := range mem2.Messages("q") {
		if string(m.Key) != "k" {
			t.Errorf("retried copy lost its key: %+v", m)
		}
	}
}

func TestMemoryPartitionCommitAdvancesOverTheSettledPrefix(t *testing.T) {
	ctx := context.Background()
	mem := bqtest.NewInMemoryTransport(bqtest.WithMemoryPartitions(2))
	for i := range 3 {
		mem.PublishKeyed(ctx, "q", []byte("same"), envBody(t, "urn:t:x", 0), map[string]string{"i": fmt.Sprint(i)})
	}
	part := mem.PartitionFor([]byte("same"))
	var got []*ReceivedMessage
	for range 3 {
		m, _ := mem.Pop(ctx, "q", 0)
		if m.Partition != int32(part) || string(m.Key) != "same" {
			t.Fatalf("message on partition %d key %q, want %d same", m.Partition, m.Key, part)
		}
		got = append(got, m)
	}
	mem.Ack(ctx, got[1])
	mem.Ack(ctx, got[2])
	if c := mem.Committed("q", part); c != 0 {
		t.Fatalf("committed %d with offset 0 unsettled", c)
	}
	// A hand-back returns the message before the later ones of its queue.
	mem.HandBack(ctx, got[0])
	mem.PublishKeyed(ctx, "q", []byte("same"), envBody(t, "urn:t:x", 0), map[string]string{"i": "3"})
	if ms := mem.Messages("q"); len(ms) != 2 || ms[0].Headers["i"] != "0" {
		t.Fatalf("queue after hand-back: %+v", ms)
	}
	m, _ := mem.Pop(ctx, "q", 0)
	mem.Ack(ctx, m)
	if c := mem.Committed("q", part); c != 3 {
		t.Errorf("committed %d once offsets 0..2 settled, want 3", c)
	}
	if c := mem.Committed("q", 1-part); c != 0 {
		t.Errorf("empty partition committed %d", c)
	}
}
