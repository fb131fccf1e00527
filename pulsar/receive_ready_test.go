package pulsar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	babelqueue "github.com/babelqueue/babelqueue-go/core"
)

// readySetup returns a Transport whose consumer has queued bodies, in
// order, on its receive channel (so that the prefetcher serves Pop).
func readySetup(t *testing.T, bodies ...string) *Transport {
	t.Helper()
	fc := &benchConsumerFake{ch: make(chan pulsar.ConsumerMessage, len(bodies))}
	for _, b := range bodies {
		fc.ch <- pulsar.ConsumerMessage{Message: &fakeMessage{payload: []byte(b), props: map[string]string{}}}
	}
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = pulsar.Shared, true
	tr := newTransport(cfg, benchClientFake{fc}, false, nil, nil)
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func TestReceiveReadyTakesPreparedDeliveriesInPopOrder(t *testing.T) {
	bodies := []string{`{"n":0}`, `{"n":1}`, `{"n":2}`, `{"n":3}`}
	tr := readySetup(t, bodies...)
	if m, ok := tr.ReceiveReady("q"); ok || m != nil {
		t.Fatalf("ReceiveReady before the queue was popped = %v, %v; want nothing (it never subscribes)", m, ok)
	}
	first, err := tr.Pop(context.Background(), "q", time.Second)
	if err != nil || first == nil {
		t.Fatalf("Pop = %v, %v", first, err)
	}
	got := []string{first.Body}
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < len(bodies) && time.Now().Before(deadline) {
		if m, ok := tr.ReceiveReady("q"); ok {
			got = append(got, m.Body)
			if err := tr.Ack(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			continue
		}
		time.Sleep(time.Millisecond) // the prefetcher has not prepared it yet
	}
	for i := range bodies {
		if i >= len(got) || got[i] != bodies[i] {
			t.Fatalf("bodies in the order handed out %q, want %q", got, bodies)
		}
	}
	if m, ok := tr.ReceiveReady("q"); ok || m != nil {
		t.Errorf("ReceiveReady with nothing prepared = %v, %v; want nothing", m, ok)
	}
	if m, ok := tr.ReceiveReady("other"); ok || m != nil {
		t.Errorf("ReceiveReady of a queue never popped = %v, %v", m, ok)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if m, ok := tr.ReceiveReady("q"); ok || m != nil {
		t.Errorf("ReceiveReady after Close = %v, %v", m, ok)
	}
	if _, err := tr.Pop(context.Background(), "q", time.Millisecond); !errors.Is(err, babelqueue.ErrClosed) {
		t.Errorf("Pop after Close = %v, want ErrClosed", err)
	}
}

// TestPopIsDirectUntilNotifyReadySwitchesToPrefetching: a queue's Pops take
// the client's messages on the caller's goroutine (no prefetcher goroutine
// runs) until NotifyReady asks for announcements; from then on a
// prefetcher serves them, in the same order, and announces what it queues
// while no Pop waits.
func TestPopIsDirectUntilNotifyReadySwitchesToPrefetching(t *testing.T) {
	bodies := []string{`{"n":0}`, `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`}
	fc := &benchConsumerFake{ch: make(chan pulsar.ConsumerMessage, len(bodies))}
	cfg := defaultConfig()
	cfg.serviceURL = "pulsar://127.0.0.1:6650"
	cfg.subType, cfg.subTypeDeclared = pulsar.Shared, true
	tr := newTransport(cfg, benchClientFake{fc}, false, nil, nil)
	defer tr.Close()
	send := func(b string) {
		fc.ch <- pulsar.ConsumerMessage{Message: &fakeMessage{payload: []byte(b), props: map[string]string{}}}
	}
	ctx := context.Background()
	send(bodies[0])
	send(bodies[1])
	var got []string
	for range 2 {
		m, err := tr.Pop(ctx, "q", time.Second)
		if err != nil || m == nil {
			t.Fatalf("Pop = %v, %v", m, err)
		}
		got = append(got, m.Body)
	}
	s := tr.prefetched("q")
	if s == nil || s.pre.running.Load() {
		t.Fatal("a prefetcher goroutine runs before NotifyReady")
	}
	if m, err := tr.Pop(ctx, "q", 10*time.Millisecond); m != nil || err != nil {
		t.Fatalf("direct Pop on an empty channel = %v, %v; want nil, nil", m, err)
	}

	announced := make(chan struct{}, 8)
	if !tr.NotifyReady("q", func() { announced <- struct{}{} }) {
		t.Fatal("NotifyReady = false on a popped queue")
	}
	if !s.pre.running.Load() {
		t.Fatal("NotifyReady did not start the prefetcher")
	}
	for _, b := range bodies[2:] {
		send(b)
	}
	select {
	case <-announced:
	case <-time.After(5 * time.Second):
		t.Fatal("no announcement of the batch queued while no Pop waited")
	}
	for len(got) < len(bodies) {
		m, err := tr.Pop(ctx, "q", time.Second)
		if err != nil || m == nil {
			t.Fatalf("Pop = %v, %v", m, err)
		}
		got = append(got, m.Body)
	}
	for i := range bodies {
		if got[i] != bodies[i] {
			t.Fatalf("bodies in the order handed out %q, want %q", got, bodies)
		}
	}
}

// TestDirectPopWaitingAtCloseReturnsErrClosed: Close ends a direct Pop
// waiting on an empty channel with ErrClosed, and the prefetcher that
// never ran counts as stopped.
func TestDirectPopWaitingAtCloseReturnsErrClosed(t *testing.T) {
	tr := readySetup(t)
	popped := make(chan error, 1)
	go func() {
		_, err := tr.Pop(context.Background(), "q", time.Minute)
		popped <- err
	}()
	time.Sleep(20 * time.Millisecond)
	s := tr.prefetched("q")
	if s == nil {
		t.Fatal("queue not subscribed after Pop")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	popEndsClosed(t, popped)
	select {
	case <-s.pre.done:
	default:
		t.Error("prefetcher not marked stopped after Close")
	}
	if s.pre.running.Load() {
		t.Error("Close started the prefetcher")
	}
}

// TestSequentialConsumerReadsDirect: the App's sequential loop handles a
// queue's messages without ever starting the prefetcher's goroutine (it
// never asks for announcements), and settles each one.
func TestSequentialConsumerReadsDirect(t *testing.T) {
	tr, fc := benchReceiveSetupT(t)
	const n = 50
	fc.fill(n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	handled := 0
	c := NewConsumer(tr, "q", map[string]babelqueue.Handler{
		"urn:babel:bench:ping": func(context.Context, *babelqueue.Envelope) error {
			if handled++; handled == n {
				cancel()
			}
			return nil
		},
	})
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if handled != n || fc.acked.Load() != n {
		t.Fatalf("handled %d, acked %d of %d", handled, fc.acked.Load(), n)
	}
	s := tr.prefetched("q")
	if s == nil {
		t.Fatal("queue not subscribed")
	}
	if s.pre.running.Load() {
		t.Error("the sequential loop started the prefetcher goroutine")
	}
}
