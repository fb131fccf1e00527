package bqtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/babelqueue/babelqueue-go/core/driver"
	"github.com/babelqueue/babelqueue-go/core/wire"
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
	if msg.Queue != "q" || msg.Headers[wire.HeaderJob] != "urn:x" {
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
	mem.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: "q", Body: envBody(t, "urn:x", 0), Delay: 10 * time.Second})
	got := make(chan *driver.ReceivedMessage, 1)
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
	nacking := with(mem, func(f *driver.Features) { f.HandBack = driver.HandBackNack })
	if err := nacking.HandBack(ctx, a); err != nil {
		t.Fatal(err)
	}
	a2, _ := mem.Pop(ctx, "q", 0)
	if a2.Headers[wire.HeaderJob] != "urn:a" {
		t.Fatalf("a nacked message must come back first, got %s", a2.Headers[wire.HeaderJob])
	}
	if env := mustDecode(t, a2.Body); env.Attempts != 1 || a2.Headers[wire.HeaderAttempts] != "1" {
		t.Errorf("after one nack attempts = %d, header %q; want 1 (redelivery count floor)", env.Attempts, a2.Headers[wire.HeaderAttempts])
	}
	if err := mem.HandBack(ctx, a2); err != nil {
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
	if err := mem.HandBack(ctx, a2); err == nil {
		t.Error("rewinding a settled message succeeded")
	}
	if err := mem.Ack(ctx, &driver.ReceivedMessage{Queue: "q"}); err == nil {
		t.Error("acknowledging a foreign message succeeded")
	}
	if mem.Acked("q") != 1 || mem.Len("q") != 1 || mem.InFlight("q") != 0 {
		t.Errorf("acked=%d len=%d inflight=%d", mem.Acked("q"), mem.Len("q"), mem.InFlight("q"))
	}
}

func TestMemoryHeaderAttemptsAreAuthoritative(t *testing.T) {
	mem := NewInMemoryTransport()
	ctx := context.Background()
	mem.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: "q", Body: envBody(t, "urn:x", 5), From: nil, Headers: map[string]string{wire.HeaderAttempts: "2"}})
	mem.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: "q", Body: envBody(t, "urn:x", 5), From: nil, Headers: map[string]string{wire.HeaderAttempts: "+2"}})
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
	mem.Send(ctx, &driver.Outgoing{Intent: driver.IntentRedrive, Queue: "r", Body: m.Body, From: m})
	mem.Send(ctx, &driver.Outgoing{Intent: driver.IntentForward, Queue: "f", Body: "raw", From: m, Headers: map[string]string{"only": "this"}})
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
		if op == "publish" {
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
		if !errors.Is(err, driver.ErrClosed) {
			t.Errorf("Pop after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a waiting Pop")
	}
	if err := mem.Publish(ctx, "q", "x"); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Publish after Close = %v", err)
	}
}

func TestMemoryFeaturesNarrowWhatItDoes(t *testing.T) {
	ctx := context.Background()
	full := NewInMemoryTransport()
	if f := full.Features(); !f.Keys || !f.Headers || !f.Delay || f.SettlesRetry || f.HandBack != driver.HandBackRewind {
		t.Errorf("default features = %+v", f)
	}
	bare := NewInMemoryTransport(WithMemoryFeatures(driver.Features{}))
	body := envBody(t, "urn:x", 0)
	if _, err := bare.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: "q", Body: body, Delay: time.Second}); !errors.Is(err, driver.ErrDelayUnsupported) {
		t.Errorf("delay without the feature = %v, want ErrDelayUnsupported", err)
	}
	if _, err := bare.Send(ctx, &driver.Outgoing{Intent: driver.IntentPublish, Queue: "q", Body: body, Key: []byte("k"), Headers: map[string]string{"x": "y"}}); err != nil {
		t.Fatal(err)
	}
	got := bare.Messages("q")
	if len(got) != 1 || got[0].Key != nil || got[0].Headers["x"] != "" {
		t.Errorf("a bare transport kept what its features rule out: %+v", got)
	}
	// driver.HandBackNone leaves the message reserved.
	m, _ := bare.Pop(ctx, "q", 0)
	if err := bare.HandBack(ctx, m); err != nil || bare.InFlight("q") != 1 {
		t.Errorf("driver.HandBackNone: err %v, in flight %d, want it still reserved", err, bare.InFlight("q"))
	}
	// SettlesRetry acknowledges the original with the copy.
	settling := NewInMemoryTransport(WithMemoryFeatures(driver.Features{SettlesRetry: true}), WithMemoryRetryTiers(time.Minute))
	settling.Publish(ctx, "q", body)
	m, _ = settling.Pop(ctx, "q", 0)
	r, err := settling.Send(ctx, &driver.Outgoing{Intent: driver.IntentRetry, Queue: "q", Body: body, From: m, Attempt: 0})
	if err != nil || settling.Acked("q") != 1 || settling.InFlight("q") != 0 || r.Delay != time.Minute {
		t.Errorf("settling retry: err %v acked %d in flight %d delay %v", err, settling.Acked("q"), settling.InFlight("q"), r.Delay)
	}
}

func TestIntentNames(t *testing.T) {
	want := map[driver.Intent]string{driver.IntentPublish: "publish", driver.IntentRetry: "retry", driver.IntentRelease: "release", driver.IntentDeadLetter: "dead_letter",
		driver.IntentForward: "forward", driver.IntentRedrive: "redrive", driver.IntentRestore: "restore", 0: "intent(0)"}
	for i, w := range want {
		if i.String() != w {
			t.Errorf("Intent(%d) = %q, want %q", i, i.String(), w)
		}
	}
	for i := driver.IntentPublish; i <= driver.IntentRestore; i++ {
		if i.Verbatim() != (i == driver.IntentForward || i == driver.IntentRestore) {
			t.Errorf("%v.Verbatim() = %v", i, i.Verbatim())
		}
	}
}

func TestMemoryReceiveReadyFromTakesOnePartitionInOrder(t *testing.T) {
	ctx := context.Background()
	mem := NewInMemoryTransport(WithMemoryPartitions(2))
	var keys [2][]byte
	for i := 0; keys[0] == nil || keys[1] == nil; i++ {
		k := fmt.Appendf(nil, "k-%d", i)
		keys[mem.PartitionFor(k)] = k
	}
	// In the queue's order, attempts 0-3 on partitions 0, 1, 0, 1.
	for i := range 4 {
		if err := mem.PublishKeyed(ctx, "q", keys[i%2], envBody(t, "urn:x", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	take := func(p int32) *driver.ReceivedMessage {
		t.Helper()
		m, ok := mem.ReceiveReadyFrom("q", p)
		if ok && m.Partition != p {
			t.Fatalf("ReceiveReadyFrom(%d) returned a message of partition %d", p, m.Partition)
		}
		return m
	}
	attempts := func(m *driver.ReceivedMessage) int {
		t.Helper()
		if m == nil {
			return -1
		}
		return mustDecode(t, m.Body).Attempts
	}
	first := take(1)
	if got := attempts(first); got != 1 {
		t.Fatalf("first of partition 1 = %d, want 1", got)
	}
	// Handed back, it returns to its place, ahead of 3.
	if err := mem.HandBack(ctx, first); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{1, 3, -1} {
		m := take(1)
		if got := attempts(m); got != want {
			t.Fatalf("partition 1 gave %d, want %d", got, want)
		}
		if m != nil {
			if err := mem.Ack(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Partition 0 is untouched, in order.
	for _, want := range []int{0, 2} {
		m, err := mem.Pop(ctx, "q", 0)
		if err != nil || attempts(m) != want {
			t.Fatalf("Pop = %v, %v; want attempts %d", m, err, want)
		}
	}
	if mem.Committed("q", 1) != 2 {
		t.Errorf("partition 1 committed %d, want 2", mem.Committed("q", 1))
	}
}
