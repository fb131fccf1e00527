package babelqueue

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestMemoryPopWaitsForAPublishWithoutPolling(t *testing.T) {
	mem := NewInMemoryTransport()
	ctx := context.Background()
	go func() {
		time.Sleep(20 * time.Millisecond)
		mem.Publish(ctx, "q", envBody(t, "urn:x", 0))
	}()
	start := time.Now()
	msg, err := mem.Pop(ctx, "q", time.Minute)
	if err != nil || msg == nil {
		t.Fatalf("Pop = %v, %v", msg, err)
	}
	if time.Since(start) > 30*time.Second {
		t.Error("Pop waited for its timeout instead of the publish")
	}
	if msg.Queue != "q" || msg.Headers[HeaderJob] != "urn:x" {
		t.Errorf("delivery = %+v", msg)
	}
	if m, err := mem.Pop(ctx, "q", 10*time.Millisecond); m != nil || err != nil {
		t.Errorf("Pop on an empty queue = %v, %v; want nil, nil", m, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := mem.Pop(cctx, "q", time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Pop with a cancelled context = %v", err)
	}
}

func TestMemoryPopWakesWhenTheClockMakesAMessageDue(t *testing.T) {
	clock := NewFakeClock(epoch)
	mem := NewInMemoryTransport(WithMemoryClock(clock))
	ctx := context.Background()
	mem.PublishDelayed(ctx, "q", envBody(t, "urn:x", 0), 10*time.Second)
	got := make(chan *ReceivedMessage, 1)
	go func() {
		m, _ := mem.Pop(ctx, "q", time.Minute)
		got <- m
	}()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := clock.WaitForTimers(wctx, 1); err != nil {
		t.Fatal("Pop is not waiting on the clock for the delayed message")
	}
	clock.Advance(10 * time.Second)
	select {
	case m := <-got:
		if m == nil {
			t.Fatal("Pop returned nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pop did not wake when the message became due")
	}
}

func TestMemoryNackRewindAndReconcile(t *testing.T) {
	mem := NewInMemoryTransport()
	ctx := context.Background()
	mem.Publish(ctx, "q", envBody(t, "urn:a", 0))
	mem.Publish(ctx, "q", envBody(t, "urn:b", 0))
	a, _ := mem.Pop(ctx, "q", 0)
	if err := mem.Nack(ctx, a); err != nil {
		t.Fatal(err)
	}
	a2, _ := mem.Pop(ctx, "q", 0)
	if a2.Headers[HeaderJob] != "urn:a" {
		t.Fatalf("a nacked message must come back first, got %s", a2.Headers[HeaderJob])
	}
	if env := mustDecode(t, a2.Body); env.Attempts != 1 || a2.Headers[HeaderAttempts] != "1" {
		t.Errorf("after one nack attempts = %d, header %q; want 1 (redelivery count floor)", env.Attempts, a2.Headers[HeaderAttempts])
	}
	if err := mem.Rewind(ctx, a2); err != nil {
		t.Fatal(err)
	}
	a3, _ := mem.Pop(ctx, "q", 0)
	if env := mustDecode(t, a3.Body); env.Attempts != 1 {
		t.Errorf("a rewind changed the count to %d", env.Attempts)
	}
	if err := mem.Ack(ctx, a3); err != nil {
		t.Fatal(err)
	}
	if err := mem.Ack(ctx, a3); err == nil {
		t.Error("a second Ack succeeded")
	}
	if err := mem.Rewind(ctx, a2); err == nil {
		t.Error("rewinding a settled message succeeded")
	}
	if err := mem.Ack(ctx, &ReceivedMessage{Queue: "q"}); err == nil {
		t.Error("acknowledging a foreign message succeeded")
	}
	if mem.Acked("q") != 1 || mem.Len("q") != 1 || mem.InFlight("q") != 0 {
		t.Errorf("acked=%d len=%d inflight=%d", mem.Acked("q"), mem.Len("q"), mem.InFlight("q"))
	}
}

func TestMemoryHeaderAttemptsAreAuthoritative(t *testing.T) {
	mem := NewInMemoryTransport()
	ctx := context.Background()
	mem.Forward(ctx, "q", envBody(t, "urn:x", 5), nil, map[string]string{HeaderAttempts: "2"})
	mem.Forward(ctx, "q", envBody(t, "urn:x", 5), nil, map[string]string{HeaderAttempts: "+2"})
	for _, want := range []int{2, 5} {
		m, _ := mem.Pop(ctx, "q", 0)
		if got := mustDecode(t, m.Body).Attempts; got != want {
			t.Errorf("attempts = %d, want %d", got, want)
		}
	}
}

func TestMemoryKeysAndForward(t *testing.T) {
	mem := NewInMemoryTransport()
	ctx := context.Background()
	mem.PublishKeyed(ctx, "q", []byte("k"), envBody(t, "urn:x", 0), map[string]string{"h": "v"})
	m, _ := mem.Pop(ctx, "q", 0)
	mem.PublishFrom(ctx, "r", m.Body, m)
	mem.Forward(ctx, "f", "raw", m, map[string]string{"only": "this"})
	mem.Publish(ctx, "p", m.Body)
	if got := mem.Messages("r")[0]; string(got.Key) != "k" || got.Headers["h"] != "" {
		t.Errorf("PublishFrom = %+v: key kept, headers projected only", got)
	}
	if got := mem.Messages("f")[0]; string(got.Key) != "k" || len(got.Headers) != 1 || got.Body != "raw" {
		t.Errorf("Forward = %+v", got)
	}
	if got := mem.Messages("p")[0]; got.Key != nil {
		t.Errorf("Publish invented a key %q", got.Key)
	}
}

func TestMemoryFaultAndClose(t *testing.T) {
	mem := NewInMemoryTransport()
	ctx := context.Background()
	refused := errors.New("refused")
	mem.SetFault(func(op, q string) error {
		if op == "Publish" {
			return refused
		}
		return nil
	})
	if err := mem.Publish(ctx, "q", "x"); !errors.Is(err, refused) || mem.Len("q") != 0 {
		t.Errorf("faulted Publish = %v, len %d", err, mem.Len("q"))
	}
	mem.SetFault(nil)
	waiting := make(chan error, 1)
	go func() {
		_, err := mem.Pop(ctx, "empty", time.Minute)
		waiting <- err
	}()
	time.Sleep(10 * time.Millisecond)
	mem.Close()
	select {
	case err := <-waiting:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Pop after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a waiting Pop")
	}
	if err := mem.Publish(ctx, "q", "x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close = %v", err)
	}
}

func TestMemoryImplementsEveryCapability(t *testing.T) {
	var tr Transport = NewInMemoryTransport()
	checks := map[string]bool{}
	_, checks["HeaderPublisher"] = tr.(HeaderPublisher)
	_, checks["KeyedRepublisher"] = tr.(KeyedRepublisher)
	_, checks["HeaderRepublisher"] = tr.(HeaderRepublisher)
	_, checks["Forwarder"] = tr.(Forwarder)
	_, checks["Rewinder"] = tr.(Rewinder)
	_, checks["NegativeAcknowledger"] = tr.(NegativeAcknowledger)
	_, checks["DelayedPublisher"] = tr.(DelayedPublisher)
	_, checks["TieredRetrier"] = tr.(TieredRetrier)
	_, checks["Retrier"] = tr.(Retrier)
	for name, ok := range checks {
		if !ok {
			t.Errorf("InMemoryTransport is not a %s", name)
		}
	}
	err := tr.(TieredRetrier).PublishRetryForAttempt(context.Background(), &ReceivedMessage{}, 0)
	if !errors.Is(err, ErrDelayUnsupported) {
		t.Errorf("without tiers PublishRetryForAttempt = %v, want ErrDelayUnsupported", err)
	}
}
